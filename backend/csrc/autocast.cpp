// Autocast on spyre: the same per-op policy PyTorch applies on its own
// accelerators (ATen/autocast_mode.h's op lists), registered for the
// AutocastPrivateUse1 key. Ops not listed fall through to the device kernels.
//
//   lower_precision_fp  matmul-class ops run in the autocast dtype (fp16/bf16)
//   fp32                precision-sensitive ops (exp, log, norms, losses) run in fp32
//   fp32_set_opt_dtype  reductions such as sum/softmax accumulate in fp32
//   promote             mixed-dtype ops run in the widest input dtype
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace spyre {
namespace {

// PyTorch's op lists name these types unqualified (they are written for namespace at::autocast).
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

#define SPYRE_KERNEL_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define SPYRE_KERNEL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define SPYRE_KERNEL_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define SPYRE_KERNEL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

// As on CUDA: binary_cross_entropy is unsafe to autocast (use the *_with_logits form).
at::Tensor binary_cross_entropy_banned(
    const at::Tensor&,
    const at::Tensor&,
    const std::optional<at::Tensor>&,
    int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast on spyre, "
      "as on CUDA. Use torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss, "
      "or disable autocast for the region.");
}

} // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(SPYRE_KERNEL_LOWER_PRECISION)
  AT_FORALL_FP32(SPYRE_KERNEL_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(SPYRE_KERNEL_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(SPYRE_KERNEL_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}

} // namespace spyre
