// OpenReg's minimal kernel set for spyre: factories, views, resize/set_,
// copies and scalar reads. Every other aten op goes to the Python fallback.
#include "allocator.h"
#include "device_state.h"
#include "dtype_policy.h"
#include "empty_tensor.h"
#include "transfer_stats.h"

#include <ATen/ATen.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_copy_from_and_resize_native.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace spyre {

namespace {

c10::DeviceIndex device_index_of(std::optional<c10::Device> device_opt) {
  const auto device = c10::device_or_default(device_opt);
  TORCH_CHECK(device.is_privateuseone(), "expected a spyre device, got ", device);
  return device.has_index() ? device.index() : current_device();
}

void check_factory_options(std::optional<c10::Layout> layout_opt, std::optional<bool> pin_opt) {
  TORCH_CHECK(
      c10::layout_or_default(layout_opt) == c10::Layout::Strided,
      "spyre supports only strided tensors, got layout ", c10::layout_or_default(layout_opt));
  TORCH_CHECK(
      !c10::pinned_memory_or_default(pin_opt),
      "pin_memory=True is only meaningful for CPU tensors, not spyre tensors");
}

at::Tensor empty_memory_format(
    c10::IntArrayRef size,
    std::optional<c10::ScalarType> dtype_opt,
    std::optional<c10::Layout> layout_opt,
    std::optional<c10::Device> device_opt,
    std::optional<bool> pin_memory_opt,
    std::optional<c10::MemoryFormat> memory_format_opt) {
  check_factory_options(layout_opt, pin_memory_opt);
  const auto strides =
      strides_for(size, memory_format_opt.value_or(c10::MemoryFormat::Contiguous));
  return empty_spyre(size, strides, c10::dtype_or_default(dtype_opt), device_index_of(device_opt));
}

at::Tensor empty_strided(
    c10::IntArrayRef size,
    c10::IntArrayRef stride,
    std::optional<c10::ScalarType> dtype_opt,
    std::optional<c10::Layout> layout_opt,
    std::optional<c10::Device> device_opt,
    std::optional<bool> pin_memory_opt) {
  check_factory_options(layout_opt, pin_memory_opt);
  return empty_spyre(size, stride, c10::dtype_or_default(dtype_opt), device_index_of(device_opt));
}

at::Tensor as_strided(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride,
    std::optional<c10::SymInt> storage_offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(storage_offset));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize_(
    const at::Tensor& self,
    c10::SymIntArrayRef size,
    std::optional<at::MemoryFormat> memory_format) {
  const c10::DeviceGuard guard(self.device());
  check_dtype_supported(self.scalar_type());
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), memory_format);
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  return at::native::set_(self, source);
}

at::Tensor& set_source_storage_offset(
    at::Tensor& result,
    at::Storage storage,
    int64_t storage_offset,
    c10::IntArrayRef size,
    c10::IntArrayRef stride) {
  return at::cpu::set_(result, storage, storage_offset, size, stride);
}

at::Tensor& set_empty(at::Tensor& self) {
  // set_() with no source: an empty tensor on a fresh empty storage.
  auto empty = empty_spyre({0}, {1}, self.scalar_type(), self.device().index());
  return at::native::set_tensor_(self, empty);
}

// A CPU tensor viewing the same host memory as spyre tensor `t`, with its
// conjugate/negative bits so the host copy resolves them.
at::Tensor as_host_view(const at::Tensor& t) {
  auto view = at::from_blob(t.data_ptr(), t.sizes(), t.strides(), t.options().device(at::kCPU));
  view._set_conj(t.is_conj());
  view._set_neg(t.is_neg());
  return view;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined(), "copy source is not defined");
  TORCH_CHECK(dst.defined(), "copy destination is not defined");
  if (dst.is_privateuseone()) {
    check_dtype_supported(dst.scalar_type());
  }
  const int64_t bytes = self.numel() * static_cast<int64_t>(self.element_size());
  if (self.numel() == 0) {
    return dst;
  }
  at::Tensor dst_host = dst.is_privateuseone() ? as_host_view(dst) : dst;
  const at::Tensor self_host = self.is_privateuseone() ? as_host_view(self) : self;
  at::native::copy_(dst_host, self_host, non_blocking);
  if (self.is_privateuseone() && dst.is_privateuseone()) {
    record_transfer(TransferKind::DeviceToDevice, bytes);
  } else if (dst.is_privateuseone()) {
    record_transfer(TransferKind::HostToDevice, bytes);
  } else {
    record_transfer(TransferKind::DeviceToHost, bytes);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return at::native::_local_scalar_dense_cpu(self);
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  allocator().record_stream(self.storage().data_ptr(), stream);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", as_strided);
  m.impl("view", view);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_source_storage_offset);
  m.impl("set_", set_empty);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("record_stream", record_stream);
}

// Copies resolve conjugate/negative bits themselves (as CUDA's copy does);
// without these fallthroughs the Conjugate fallback would materialise the
// source with clone(), which copies through _copy_from again, forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace spyre
