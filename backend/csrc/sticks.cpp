#include "sticks.h"

#include <ATen/EmptyTensor.h>

namespace spyre {

namespace {
int64_t round_up_sticks(int64_t bytes) {
  return (bytes + static_cast<int64_t>(kStickBytes) - 1) /
      static_cast<int64_t>(kStickBytes);
}

bool is_dense(c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t numel) {
  // Dense = the elements exactly fill the span they address.
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      return true;
    }
    span += (sizes[d] - 1) * strides[d];
  }
  return span == numel;
}
} // namespace

StickLayout flat_stick_layout(size_t nbytes) {
  StickLayout layout;
  layout.logical_bytes = static_cast<int64_t>(nbytes);
  if (nbytes == 0) {
    return layout;
  }
  layout.rows = 1;
  layout.row_bytes = static_cast<int64_t>(nbytes);
  layout.sticks_per_row = round_up_sticks(layout.row_bytes);
  layout.sticks = layout.sticks_per_row;
  layout.padded_bytes = layout.sticks * static_cast<int64_t>(kStickBytes);
  return layout;
}

StickLayout stick_layout(
    c10::IntArrayRef sizes,
    c10::IntArrayRef strides,
    size_t itemsize) {
  int64_t numel = 1;
  for (auto s : sizes) {
    numel *= s;
  }
  StickLayout layout;
  if (numel == 0) {
    return layout;
  }
  if (sizes.empty()) {
    return flat_stick_layout(itemsize);
  }
  if (!is_dense(sizes, strides, numel)) {
    return flat_stick_layout(at::detail::computeStorageNbytes(sizes, strides, itemsize));
  }
  // Innermost = the last dimension with stride 1 and more than one element.
  int64_t inner = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (strides[d] == 1 && sizes[d] > 1) {
      inner = sizes[d];
      break;
    }
  }
  layout.rows = numel / inner;
  layout.row_bytes = inner * static_cast<int64_t>(itemsize);
  layout.sticks_per_row = round_up_sticks(layout.row_bytes);
  layout.sticks = layout.rows * layout.sticks_per_row;
  layout.logical_bytes = numel * static_cast<int64_t>(itemsize);
  layout.padded_bytes = layout.sticks * static_cast<int64_t>(kStickBytes);
  return layout;
}

} // namespace spyre
