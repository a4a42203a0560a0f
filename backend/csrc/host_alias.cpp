#include "host_alias.h"

#include "empty_tensor.h"

#include <ATen/ATen.h>
#include <ATen/ops/copy_native.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>

#include <c10/util/SmallVector.h>

namespace spyre {

namespace {

// Keeps the spyre storage alive while a CPU alias of it exists: a reference held in the alias's
// DataPtr context (a count on the StorageImpl itself, not a heap-allocated handle: this runs for
// every argument of every fallback op).
void release_storage_ref(void* ctx) {
  c10::intrusive_ptr<c10::StorageImpl>::reclaim(static_cast<c10::StorageImpl*>(ctx));  // drops it
}

c10::Storage host_storage_over(const c10::Storage& device_storage) {
  c10::StorageImpl* keep_alive = c10::Storage(device_storage).unsafeReleaseStorageImpl();  // a new reference
  // Resizable with the CPU allocator: an out= kernel that must grow the
  // buffer moves the alias to fresh host memory, which the fallback detects.
  return c10::Storage(
      c10::Storage::use_byte_size_t(),
      device_storage.nbytes(),
      c10::DataPtr(
          const_cast<void*>(device_storage.data()),
          keep_alive,
          &release_storage_ref,
          c10::Device(c10::DeviceType::CPU)),
      c10::GetCPUAllocator(),
      /*resizable=*/true);
}

at::Tensor tensor_over(
    c10::Storage storage,
    c10::DispatchKey key,
    const at::Tensor& geometry) {
  auto tensor = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(key), geometry.dtype());
  auto* impl = tensor.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(geometry.sizes(), geometry.strides(), geometry.storage_offset());
  tensor._set_conj(geometry.is_conj());
  tensor._set_neg(geometry.is_neg());
  return tensor;
}

} // namespace

void host_aliases_into(c10::ArrayRef<at::Tensor> tensors, c10::SmallVectorImpl<at::Tensor>& out) {
  // An op has a handful of tensors: a linear scan beats hashing (this runs for every fallback op).
  c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 6> host_storages;
  out.reserve(out.size() + tensors.size());
  for (const auto& t : tensors) {
    if (!t.defined() || !t.is_privateuseone()) {
      out.push_back(t);
      continue;
    }
    const auto& storage = t.storage();
    const c10::Storage* host = nullptr;
    for (const auto& [impl, s] : host_storages) {
      if (impl == storage.unsafeGetStorageImpl()) {
        host = &s;
      }
    }
    if (host == nullptr) {
      host = &host_storages.emplace_back(storage.unsafeGetStorageImpl(), host_storage_over(storage)).second;
    }
    out.push_back(tensor_over(*host, c10::DispatchKey::CPU, t));
  }
}

std::vector<at::Tensor> host_aliases(const std::vector<at::Tensor>& tensors) {
  c10::SmallVector<at::Tensor, 6> aliases;
  host_aliases_into(tensors, aliases);
  return {aliases.begin(), aliases.end()};
}

at::Tensor device_view(const at::Tensor& base, const at::Tensor& host_view) {
  TORCH_CHECK(base.is_privateuseone(), "device_view: base must be a spyre tensor");
  return tensor_over(base.storage(), c10::DispatchKey::PrivateUse1, host_view);
}

at::Tensor adopt_host_tensor(const at::Tensor& host, c10::DeviceIndex device) {
  TORCH_CHECK(host.device().is_cpu(), "adopt_host_tensor: expected a CPU tensor");
  const bool keep_strides = host.is_non_overlapping_and_dense();
  const auto strides = keep_strides ? host.strides().vec() : row_major_strides(host.sizes());
  at::Tensor result = empty_spyre(host.sizes(), strides, host.scalar_type(), device);
  if (host.numel() > 0) {
    c10::SmallVector<at::Tensor, 1> result_host;
    host_aliases_into(result, result_host);
    at::native::copy_(result_host[0], host.resolve_conj().resolve_neg(), false);
  }
  return result;
}

} // namespace spyre
