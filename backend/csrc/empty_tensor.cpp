#include "empty_tensor.h"

#include "allocator.h"
#include "device_state.h"
#include "dtype_policy.h"
#include "sticks.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

namespace spyre {

std::vector<int64_t> row_major_strides(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

std::vector<int64_t> strides_for(c10::IntArrayRef sizes, c10::MemoryFormat memory_format) {
  switch (memory_format) {
    case c10::MemoryFormat::ChannelsLast:
      TORCH_CHECK(sizes.size() == 4, "channels_last memory format needs a 4-d tensor");
      return c10::get_channels_last_strides_2d(sizes);
    case c10::MemoryFormat::ChannelsLast3d:
      TORCH_CHECK(sizes.size() == 5, "channels_last_3d memory format needs a 5-d tensor");
      return c10::get_channels_last_strides_3d(sizes);
    case c10::MemoryFormat::Contiguous:
    case c10::MemoryFormat::Preserve:
      return row_major_strides(sizes);
    default:
      TORCH_CHECK(false, "unsupported memory format ", memory_format);
  }
}

at::Tensor empty_spyre(
    c10::IntArrayRef sizes,
    c10::IntArrayRef strides,
    c10::ScalarType dtype,
    c10::DeviceIndex device) {
  check_dtype_supported(dtype);
  at::detail::check_size_nonnegative(sizes);
  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, resolve_device(device)));
  const auto itemsize = c10::elementSize(dtype);
  const size_t nbytes = at::detail::computeStorageNbytes(sizes, strides, itemsize);
  const auto layout = stick_layout(sizes, strides, itemsize);
  // Strides stay the logical ones; the padding is held (and counted) past the data.
  const size_t padded = std::max(nbytes, static_cast<size_t>(layout.padded_bytes));
  auto storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(),
      nbytes,
      allocator().allocate_padded(nbytes, padded),
      &allocator(),
      /*resizable=*/true);
  auto tensor = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage),
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::scalarTypeToTypeMeta(dtype));
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return tensor;
}

} // namespace spyre
