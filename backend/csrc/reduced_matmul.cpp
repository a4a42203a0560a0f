#include "reduced_matmul.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace spyre {

namespace {

constexpr int64_t kChunk = 64;  // one fp16 stick of K, as precision.CHUNK
constexpr float kSplitter = static_cast<float>((1 << (23 - 10)) + 1);  // precision._SPLITTER
constexpr float kFastLimit = 35184372088832.0f;  // 2**45, precision._FAST_LIMIT
constexpr int64_t kGrain = 32768;

// One fused pass: c = x * S; x' = (x - c) + c, the same three roundings as precision._round_fast.
inline float round_one(float x) {
  const float c = x * kSplitter;
  return (x - c) + c;
}

// precision.round_mantissa: nearest, ties to even, on the bits; NaN and inf unchanged.
inline float round_exact(float x) {
  if (!std::isfinite(x)) {
    return x;
  }
  uint32_t raw;
  std::memcpy(&raw, &x, sizeof raw);
  const uint32_t lsb = (raw >> 13) & 1u;
  raw = (raw + ((1u << 12) - 1u) + lsb) & ~((1u << 13) - 1u);
  float out;
  std::memcpy(&out, &raw, sizeof out);
  return out;
}

// Rounds in[0, n) into out (may be in); false (out unspecified) when a value is outside the fast
// path's range, checked in the same pass.
bool round_checked(const float* in, float* out, int64_t n) {
  std::atomic<bool> ok{true};
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    bool local = true;
    for (int64_t i = begin; i < end; ++i) {
      local &= std::fabs(in[i]) < kFastLimit;  // NaN compares false, as in Python
      out[i] = round_one(in[i]);
    }
    if (!local) {
      ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

void round_contiguous(float* x, int64_t n) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      x[i] = round_one(x[i]);
    }
  });
}

// The operand rounded into a new row-major tensor, or nullopt outside the fast path's range.
std::optional<at::Tensor> rounded_operand(const at::Tensor& x) {
  auto in = x.contiguous();
  auto out = at::empty(in.sizes(), in.options());
  if (!round_checked(in.const_data_ptr<float>(), out.mutable_data_ptr<float>(), in.numel())) {
    return std::nullopt;
  }
  return out;
}

void round_in_place(at::Tensor& acc) {
  round_contiguous(acc.mutable_data_ptr<float>(), acc.numel());
}

} // namespace

std::optional<at::Tensor> reduced_matmul(const at::Tensor& a_in, const at::Tensor& b_in) {
  // Row-major operands keep every stick-sized slice of K dense for the BLAS calls below.
  const auto a = rounded_operand(a_in);
  const auto b = a ? rounded_operand(b_in) : std::nullopt;
  if (!b) {
    return std::nullopt;
  }
  const int64_t k = a->size(-1);
  const bool batched = a->dim() == 3;
  const auto first = std::min(k, kChunk);
  at::Tensor acc = batched ? at::bmm(a->narrow(-1, 0, first), b->narrow(-2, 0, first))
                           : at::mm(a->narrow(-1, 0, first), b->narrow(-2, 0, first));
  round_in_place(acc);
  for (int64_t start = kChunk; start < k; start += kChunk) {
    const int64_t len = std::min(kChunk, k - start);
    const auto part = a->narrow(-1, start, len);
    const auto other = b->narrow(-2, start, len);
    if (batched) {
      acc.baddbmm_(part, other);
    } else {
      acc.addmm_(part, other);
    }
    round_in_place(acc);  // one fused pass where the Python model took three
  }
  return acc;
}

std::optional<at::Tensor> reduced_addmm(
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const at::Scalar& beta,
    const at::Scalar& alpha) {
  auto product = reduced_matmul(a, b);
  if (!product) {
    return std::nullopt;
  }
  // beta * bias + alpha * product, each term rounded as the Python formula rounds it; a factor
  // of 1 is exact, so the common case is one in-place add.
  at::Tensor result;
  if (beta.equal(1) && alpha.equal(1) && bias.dim() <= product->dim()) {
    result = product->add_(bias);
  } else {
    result = at::add(at::mul(bias, beta), at::mul(*product, alpha)).contiguous();
  }
  float* data = result.mutable_data_ptr<float>();
  const int64_t n = result.numel();
  bool fast = true;
  for (int64_t i = 0; i < n; ++i) {  // no early exit: the loop vectorizes
    fast &= std::fabs(data[i]) < kFastLimit;
  }
  if (fast) {
    round_in_place(result);
  } else {  // infinities, NaN or huge values: exact bitwise rounding, as precision._addmm
    for (int64_t i = 0; i < n; ++i) {
      data[i] = round_exact(data[i]);
    }
  }
  return result;
}

} // namespace spyre
