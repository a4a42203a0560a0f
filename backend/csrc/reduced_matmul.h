// fp16-class matmul emulation (the simulator's reduced-precision policy, docs/simulator.md):
// operands rounded to 10 mantissa bits, K accumulated one 64-value stick at a time with the running
// sum rounded after every stick. The model is spyre_device/sim/precision.py's; this is its fast path,
// bit for bit the same as the reference there (tests/backend/sim/test_sim_precision.py).
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace spyre {

// a @ b (2-D or batched 3-D fp32); nullopt when an operand is outside the fast path's range (the
// caller then uses the exact bitwise model). The result is `out` itself when `out` is a row-major
// fp32 tensor of the product's size (accumulated there, no copy); otherwise a new tensor.
std::optional<at::Tensor> reduced_matmul(
    const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& out = std::nullopt);

// round(beta * bias + alpha * reduced_matmul(a, b)); nullopt and `out` as above (`out` is used
// when beta and alpha are 1 and it does not overlap `bias`).
std::optional<at::Tensor> reduced_addmm(
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const at::Scalar& beta,
    const at::Scalar& alpha,
    const std::optional<at::Tensor>& out = std::nullopt);

} // namespace spyre
