#include "reduced_matmul.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>

namespace spyre {

namespace {

constexpr int64_t kChunk = 64;  // one fp16 stick of K, as precision.CHUNK
constexpr float kSplitter = static_cast<float>((1 << (23 - 10)) + 1);  // precision._SPLITTER
constexpr float kFastLimit = 35184372088832.0f;  // 2**45, precision._FAST_LIMIT
constexpr int64_t kGrain = 32768;

// One fused pass: c = x * S; x' = (x - c) + c, the same three roundings as precision._round_fast_.
inline float round_one(float x) {
  const float c = x * kSplitter;
  return (x - c) + c;
}

void round_contiguous(const float* in, float* out, int64_t n) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = round_one(in[i]);
    }
  });
}

at::Tensor rounded_copy(const at::Tensor& x) {
  auto in = x.contiguous();
  auto out = at::empty_like(in, at::MemoryFormat::Contiguous);
  round_contiguous(in.const_data_ptr<float>(), out.mutable_data_ptr<float>(), in.numel());
  return out;
}

// acc (contiguous) rounded in place.
void round_in_place(at::Tensor& acc) {
  round_contiguous(acc.const_data_ptr<float>(), acc.mutable_data_ptr<float>(), acc.numel());
}

} // namespace

bool reduced_fast_path_ok(const at::Tensor& t) {
  if (t.numel() == 0) {
    return true;
  }
  auto c = t.contiguous();
  const float* p = c.const_data_ptr<float>();
  const int64_t n = c.numel();
  std::atomic<bool> ok{true};
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    bool local = true;
    for (int64_t i = begin; i < end; ++i) {
      local &= std::fabs(p[i]) < kFastLimit;  // NaN compares false, as in Python
    }
    if (!local) {
      ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

void round_fast_into(const at::Tensor& x, at::Tensor& out) {
  TORCH_CHECK(out.is_contiguous() && x.is_contiguous() && x.numel() == out.numel(), "round_fast_into: contiguous tensors");
  round_contiguous(x.const_data_ptr<float>(), out.mutable_data_ptr<float>(), x.numel());
}

std::optional<at::Tensor> reduced_matmul(const at::Tensor& a_in, const at::Tensor& b_in) {
  if (!reduced_fast_path_ok(a_in) || !reduced_fast_path_ok(b_in)) {
    return std::nullopt;
  }
  // Row-major operands keep every stick-sized slice of K dense for the BLAS calls below.
  const at::Tensor a = rounded_copy(a_in);
  const at::Tensor b = rounded_copy(b_in);
  const int64_t k = a.size(-1);
  if (k <= kChunk) {
    auto out = at::matmul(a, b).contiguous();
    round_in_place(out);
    return out;
  }
  auto acc = at::matmul(a.narrow(-1, 0, kChunk), b.narrow(-2, 0, kChunk)).contiguous();
  round_in_place(acc);
  const bool batched = acc.dim() == 3;
  for (int64_t start = kChunk; start < k; start += kChunk) {
    const int64_t len = std::min(kChunk, k - start);
    const auto part = a.narrow(-1, start, len);
    const auto other = b.narrow(-2, start, len);
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
  // beta * bias + alpha * product, each term rounded as the Python formula rounds it.
  auto result = at::add(at::mul(bias, beta), at::mul(*product, alpha)).contiguous();
  if (!reduced_fast_path_ok(result)) {
    return std::nullopt;
  }
  round_in_place(result);
  return result;
}

} // namespace spyre
