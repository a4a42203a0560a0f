// fp16-class matmul emulation (the simulator's reduced-precision policy, docs/simulator.md):
// operands rounded to 10 mantissa bits, K accumulated one 64-value stick at a time with the running
// sum rounded after every stick. The model is spyre_device/sim/precision.py's; this is its fast path,
// bit for bit the same as the reference there (tests/backend/sim/test_sim_precision.py).
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace spyre {

// a @ b (2-D or batched 3-D fp32); nullopt when an operand is outside the fast path's range (the
// caller then uses the exact bitwise model).
std::optional<at::Tensor> reduced_matmul(const at::Tensor& a, const at::Tensor& b);

// round(beta * bias + alpha * reduced_matmul(a, b)); nullopt as above.
std::optional<at::Tensor> reduced_addmm(
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const at::Scalar& beta,
    const at::Scalar& alpha);

} // namespace spyre
