// Creation of spyre tensors with storage padded to whole 128-byte sticks.
#pragma once
#include <ATen/core/Tensor.h>

namespace spyre {

at::Tensor empty_spyre(
    c10::IntArrayRef sizes,
    c10::IntArrayRef strides,
    c10::ScalarType dtype,
    c10::DeviceIndex device);

// Row-major strides of `sizes`.
std::vector<int64_t> row_major_strides(c10::IntArrayRef sizes);

// Contiguous strides of `sizes` in `memory_format`.
std::vector<int64_t> strides_for(c10::IntArrayRef sizes, c10::MemoryFormat memory_format);

} // namespace spyre
