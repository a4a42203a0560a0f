#include "reduced_matmul.h"

#include <ATen/CPUFunctions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
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

// |x| as its IEEE bits: ordered like |x| for every float, NaN above infinity.
inline int32_t abs_bits(float x) {
  int32_t raw;
  std::memcpy(&raw, &x, sizeof raw);
  return raw & 0x7fffffff;
}

// fabs(x) < kFastLimit as bits; false for NaN, as the Python check's compare is.
constexpr int32_t kFastLimitBits = std::bit_cast<int32_t>(kFastLimit);

// The range check as a reduction GCC vectorizes with plain SSE2 (a float compare folded into a
// bool kept its loops scalar): abs_bits(x) - kFastLimitBits is negative exactly for the values in
// range, so the AND of all of them keeps its sign bit exactly when every value is in range.
struct RangeCheck {
  int32_t all = -1;
  void add(float x) {
    all &= abs_bits(x) - kFastLimitBits;
  }
  bool ok() const {
    return all < 0;
  }
};

// The contiguous rounding loops are built twice on x86-64 with GCC, for AVX2 and for the
// baseline, and the loader picks one per CPU (an ifunc): eight lanes instead of SSE2's four.
// Only "avx2", not "fma": without FMA instructions the compiler cannot contract (x - c) + c
// with x * S, so every lane computes the same three roundings as round_one.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SPYRE_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPYRE_SIMD_CLONES
#endif

// Rounds in[0, n) into out (`out` may be `in`), checking the range on the way.
SPYRE_SIMD_CLONES bool round_span(const float* in, float* out, int64_t n) {
  RangeCheck check;
  for (int64_t i = 0; i < n; ++i) {
    const float x = in[i];
    check.add(x);
    out[i] = round_one(x);
  }
  return check.ok();
}

// Rounds in[0, n) into out (may be in); false (out unspecified) when a value is outside the fast
// path's range, checked in the same pass.
bool round_checked(const float* in, float* out, int64_t n) {
  std::atomic<bool> ok{true};
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    if (!round_span(in + begin, out + begin, end - begin)) {
      ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

SPYRE_SIMD_CLONES void round_span_in_place(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = round_one(x[i]);
  }
}

void round_contiguous(float* x, int64_t n) {
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) { round_span_in_place(x + begin, end - begin); });
}

// Rounds one 2-D strided matrix into row-major `out`, in tiles so that a transposed source is
// read a cache line at a time; false when a value is outside the fast path's range.
bool round_strided_2d(const float* in, int64_t rows, int64_t cols, int64_t s0, int64_t s1, float* out) {
  constexpr int64_t kTile = 32;
  RangeCheck check;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) {
          const float x = in[i * s0 + j * s1];
          check.add(x);
          out[i * cols + j] = round_one(x);
        }
      }
    }
  }
  return check.ok();
}

#if defined(__SSE2__)
// round_strided_2d for a column-major source (s0 == 1: a transposed row-major matrix, the common
// case), four columns by four rows at a time: four contiguous loads, the same three roundings as
// round_one per lane, a 4x4 register transpose, four contiguous stores. The edges go scalar.
// Writes out[i * out_stride + j] for logical element (i, j) = in[j * s1 + i], so that a caller can
// hand it the edges of a larger matrix.
bool round_transposed_2d(const float* in, int64_t rows, int64_t cols, int64_t s1, float* out, int64_t out_stride) {
  const __m128 splitter = _mm_set1_ps(kSplitter);
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff), limit = _mm_set1_epi32(kFastLimitBits);
  __m128i all = _mm_set1_epi32(-1);  // RangeCheck, four lanes at a time
  const int64_t rows4 = rows & ~int64_t{3}, cols4 = cols & ~int64_t{3};
  for (int64_t j = 0; j < cols4; j += 4) {
    for (int64_t i = 0; i < rows4; i += 4) {
      __m128 v[4];
      for (int c = 0; c < 4; ++c) {
        const __m128 x = _mm_loadu_ps(in + (j + c) * s1 + i);
        all = _mm_and_si128(all, _mm_sub_epi32(_mm_and_si128(_mm_castps_si128(x), magnitude), limit));
        const __m128 hi = _mm_mul_ps(x, splitter);
        v[c] = _mm_add_ps(_mm_sub_ps(x, hi), hi);
      }
      _MM_TRANSPOSE4_PS(v[0], v[1], v[2], v[3]);
      for (int r = 0; r < 4; ++r) {
        _mm_storeu_ps(out + (i + r) * out_stride + j, v[r]);
      }
    }
  }
  RangeCheck edges;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = (i < rows4 ? cols4 : 0); j < cols; ++j) {
      const float x = in[j * s1 + i];
      edges.add(x);
      out[i * out_stride + j] = round_one(x);
    }
  }
  return _mm_movemask_ps(_mm_castsi128_ps(all)) == 0xF && edges.ok();
}
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SPYRE_AVX2_TRANSPOSE 1
// The same for CPUs with AVX2, eight columns by eight rows at a time (an 8x8 register transpose:
// half the shuffles and loads per value of the 4x4 one); the edges of the matrix go to the 4x4 loop.
// "avx2" only, not "fma", as for the clones above: the three roundings stay separate.
__attribute__((target("avx2"))) bool round_transposed_2d_avx2(
    const float* in, int64_t rows, int64_t cols, int64_t s1, float* out) {
  const __m256 splitter = _mm256_set1_ps(kSplitter);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), limit = _mm256_set1_epi32(kFastLimitBits);
  __m256i all = _mm256_set1_epi32(-1);
  const int64_t rows8 = rows & ~int64_t{7}, cols8 = cols & ~int64_t{7};
  for (int64_t j = 0; j < cols8; j += 8) {
    for (int64_t i = 0; i < rows8; i += 8) {
      __m256 v[8];
      for (int c = 0; c < 8; ++c) {  // v[c]: column j + c, rows i .. i + 7
        const __m256 x = _mm256_loadu_ps(in + (j + c) * s1 + i);
        all = _mm256_and_si256(all, _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(x), magnitude), limit));
        const __m256 hi = _mm256_mul_ps(x, splitter);
        v[c] = _mm256_add_ps(_mm256_sub_ps(x, hi), hi);
      }
      const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
      const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
      const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
      const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
      const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
      const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
      const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
      const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
      const __m256 rows_out[8] = {
          _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
          _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
          _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
          _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
      for (int r = 0; r < 8; ++r) {
        _mm256_storeu_ps(out + (i + r) * cols + j, rows_out[r]);
      }
    }
  }
  const bool ok = _mm256_movemask_ps(_mm256_castsi256_ps(all)) == 0xFF;
  // The edges: columns cols8.. of the first rows8 rows, then every column of the last rows.
  const bool right = round_transposed_2d(in + cols8 * s1, rows8, cols - cols8, s1, out + cols8, cols);
  const bool bottom = round_transposed_2d(in + rows8, rows - rows8, cols, s1, out + rows8 * cols, cols);
  return ok && right && bottom;
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

bool round_matrix(const float* in, int64_t rows, int64_t cols, int64_t s0, int64_t s1, float* out) {
#if defined(SPYRE_AVX2_TRANSPOSE)
  if (s0 == 1 && cpu_has_avx2()) {
    return round_transposed_2d_avx2(in, rows, cols, s1, out);
  }
#endif
#if defined(__SSE2__)
  if (s0 == 1) {
    return round_transposed_2d(in, rows, cols, s1, out, cols);
  }
#endif
  return round_strided_2d(in, rows, cols, s0, s1, out);
}

// Row-major fp32 scratch tensors for the rounded operands, reused from call to call on this
// thread: a training step rounds ten small operands, and a fresh at::empty each (dispatch,
// TensorImpl, allocation) cost about as much as rounding them. A tensor is handed out again only
// when nothing else holds it (use_count 1: the rounded operands never leave matmul_into); large
// operands are allocated as before, so the cache holds at most kScratchSlots * kScratchMaxNumel floats.
constexpr size_t kScratchSlots = 16;
constexpr int64_t kScratchMaxNumel = 1 << 16;

at::Tensor scratch_like(const at::Tensor& x) {
  if (x.numel() > kScratchMaxNumel) {
    return at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  }
  thread_local std::array<at::Tensor, kScratchSlots> slots;
  thread_local size_t next = 0;
  for (auto& t : slots) {
    if (t.defined() && t.use_count() == 1 && t.scalar_type() == x.scalar_type() && t.sizes() == x.sizes()) {
      return t;
    }
  }
  auto& slot = slots[next];
  next = (next + 1) % kScratchSlots;
  slot = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  return slot;
}

// The operand rounded into a row-major scratch tensor, or nullopt outside the fast path's range. A
// strided operand (the transposed weight of F.linear, a transposed gradient) is transposed and
// rounded in the same pass: no contiguous copy first. Row-major operands keep every stick-sized
// slice of K dense for the BLAS calls, as the reference model has them (test_sim_precision.py).
std::optional<at::Tensor> rounded_operand(const at::Tensor& x) {
  auto out = scratch_like(x);
  float* dst = out.mutable_data_ptr<float>();
  if (x.is_contiguous() || x.dim() < 2 || x.dim() > 3) {
    const auto in = x.contiguous();
    if (!round_checked(in.const_data_ptr<float>(), dst, in.numel())) {
      return std::nullopt;
    }
    return out;
  }
  const bool batched = x.dim() == 3;
  const int64_t batches = batched ? x.size(0) : 1, rows = x.size(-2), cols = x.size(-1);
  const int64_t batch_stride = batched ? x.stride(0) : 0;
  const float* src = x.const_data_ptr<float>();
  std::atomic<bool> ok{true};
  at::parallel_for(0, batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      if (!round_matrix(src + n * batch_stride, rows, cols, x.stride(-2), x.stride(-1), dst + n * rows * cols)) {
        ok.store(false, std::memory_order_relaxed);
      }
    }
  });
  if (!ok.load()) {
    return std::nullopt;
  }
  return out;
}

void round_in_place(at::Tensor& acc) {
  round_contiguous(acc.mutable_data_ptr<float>(), acc.numel());
}

// Whether the product can be accumulated straight in `out`: row-major fp32 of the product's
// size, and not over `bias` (the bias is added to the product in place).
bool writable_in_place(const std::optional<at::Tensor>& out, at::IntArrayRef sizes, const at::Tensor* bias) {
  if (!out || !out->defined() || out->scalar_type() != at::kFloat || out->sizes() != sizes || !out->is_contiguous()) {
    return false;
  }
  return bias == nullptr || at::get_overlap_status(*out, *bias) == at::MemOverlapStatus::No;
}

// K-slice [start, start + len) of a row-major scratch operand (`dim` -1 for a, -2 for b): a view
// built directly on its storage, as narrow() gives, without narrow()'s trip through the dispatcher
// (slice, as_strided: four of them per product of two sticks).
at::Tensor stick_slice(const at::Tensor& x, int64_t dim, int64_t start, int64_t len) {
  c10::SmallVector<int64_t, 3> sizes(x.sizes().begin(), x.sizes().end());
  const auto d = static_cast<size_t>(x.dim() + dim);
  sizes[d] = len;
  auto view = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(x.storage()), c10::DispatchKeySet(c10::DispatchKey::CPU), x.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, x.strides(), x.storage_offset() + start * x.stride(d));
  return view;
}

// The product, accumulated stick by stick with the running sum rounded after each; with
// `round_last` false the last rounding is left to the caller (reduced_addmm fuses it with the bias).
std::optional<at::Tensor> matmul_into(
    const at::Tensor& a_in, const at::Tensor& b_in, const std::optional<at::Tensor>& out, const at::Tensor* bias,
    bool round_last) {
  const auto a = rounded_operand(a_in);
  const auto b = a ? rounded_operand(b_in) : std::nullopt;
  if (!b) {
    return std::nullopt;
  }
  const int64_t k = a->size(-1);
  const bool batched = a->dim() == 3;
  // The CPU kernels called directly (at::cpu::): the same kernels the dispatcher would pick, without
  // its lookup per call; with a single stick of K the operands need no narrowing.
  const auto a0 = k <= kChunk ? *a : stick_slice(*a, -1, 0, kChunk);
  const auto b0 = k <= kChunk ? *b : stick_slice(*b, -2, 0, kChunk);
  at::Tensor acc;
  c10::SmallVector<int64_t, 3> sizes(a->sizes().begin(), a->sizes().end());
  sizes.back() = b->size(-1);
  if (writable_in_place(out, sizes, bias)) {  // the kernel's out=: no product to copy afterwards
    acc = *out;
    batched ? at::cpu::bmm_out(acc, a0, b0) : at::cpu::mm_out(acc, a0, b0);
  } else {
    acc = batched ? at::cpu::bmm(a0, b0) : at::cpu::mm(a0, b0);
  }
  for (int64_t start = kChunk; start < k; start += kChunk) {
    round_in_place(acc);  // one fused pass where the Python model took three
    const int64_t len = std::min(kChunk, k - start);
    const auto part = stick_slice(*a, -1, start, len);
    const auto other = stick_slice(*b, -2, start, len);
    if (batched) {
      at::cpu::baddbmm_(acc, part, other);
    } else {
      at::cpu::addmm_(acc, part, other);
    }
  }
  if (round_last) {
    round_in_place(acc);
  }
  return acc;
}

// p = round(p) + b over n values, a bias of the product's shape (`cols` == n) or one row of `cols`
// values broadcast over the rows; false when a sum is outside the fast path's range. AVX2 clones as
// the rounding loops above.
SPYRE_SIMD_CLONES bool round_and_add_span(float* p, const float* b, int64_t n, int64_t cols) {
  RangeCheck check;
  for (int64_t row = 0; row < n; row += cols) {
    for (int64_t j = 0; j < cols; ++j) {
      const float sum = round_one(p[row + j]) + b[j];
      check.add(sum);
      p[row + j] = sum;
    }
  }
  return check.ok();
}

// product = round(product) + bias in one pass (the product's last rounding fused with the add) for
// a bias of the product's shape or one row broadcast over its rows (F.linear's), checking the sums'
// range on the way; nullopt, with the product left unrounded, when torch's broadcasting add must
// do it. fl(p + b) is what torch's add computes with alpha 1 (b * 1 is exact).
std::optional<bool> round_and_add_bias_checked(at::Tensor& product, const at::Tensor& bias) {
  if (bias.scalar_type() != at::kFloat || !bias.is_contiguous()) {
    return std::nullopt;
  }
  const int64_t n = product.numel(), cols = product.size(-1);
  if (bias.sizes() == product.sizes()) {
    return round_and_add_span(product.mutable_data_ptr<float>(), bias.const_data_ptr<float>(), n, n);
  }
  if (bias.dim() == 1 && bias.size(0) == cols && cols > 0) {
    return round_and_add_span(product.mutable_data_ptr<float>(), bias.const_data_ptr<float>(), n, cols);
  }
  return std::nullopt;
}

} // namespace

std::optional<at::Tensor> reduced_matmul(
    const at::Tensor& a, const at::Tensor& b, const std::optional<at::Tensor>& out) {
  return matmul_into(a, b, out, nullptr, /*round_last=*/true);
}

std::optional<at::Tensor> reduced_addmm(
    const at::Tensor& bias,
    const at::Tensor& a,
    const at::Tensor& b,
    const at::Scalar& beta,
    const at::Scalar& alpha,
    const std::optional<at::Tensor>& out) {
  const bool unit = beta.equal(1) && alpha.equal(1) && bias.dim() <= a.dim();
  auto product = matmul_into(a, b, unit ? out : std::nullopt, &bias, /*round_last=*/!unit);
  if (!product) {
    return std::nullopt;
  }
  // beta * bias + alpha * product, each term rounded as the Python formula rounds it; a factor
  // of 1 is exact, so the common case is one in-place add.
  at::Tensor result;
  std::optional<bool> in_range;
  if (unit) {
    result = *product;
    in_range = round_and_add_bias_checked(result, bias);
    if (!in_range) {
      round_in_place(result);
      result.add_(bias);
    }
  } else {
    result = at::add(at::mul(bias, beta), at::mul(*product, alpha)).contiguous();
  }
  float* data = result.mutable_data_ptr<float>();
  const int64_t n = result.numel();
  if (!in_range) {
    RangeCheck check;
    for (int64_t i = 0; i < n; ++i) {  // no early exit: the loop vectorizes
      check.add(data[i]);
    }
    in_range = check.ok();
  }
  if (*in_range) {
    round_in_place(result);
  } else {  // infinities, NaN or huge values: exact bitwise rounding, as precision._addmm
    for (int64_t i = 0; i < n; ++i) {
      data[i] = round_exact(data[i]);
    }
  }
  return result;
}

} // namespace spyre
