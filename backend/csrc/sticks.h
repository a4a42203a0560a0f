// Spyre moves data in 128-byte "sticks": every row along the innermost
// dimension occupies whole sticks. These helpers compute that padded size.
#pragma once
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstddef>
#include <cstdint>

namespace spyre {

constexpr size_t kStickBytes = 128;

struct StickLayout {
  int64_t rows = 0;            // number of innermost rows
  int64_t row_bytes = 0;       // logical bytes of one row
  int64_t sticks_per_row = 0;  // whole sticks one row occupies
  int64_t sticks = 0;          // total sticks
  int64_t logical_bytes = 0;   // bytes the elements need
  int64_t padded_bytes = 0;    // bytes the sticks occupy (sticks * 128)
};

// Flat buffer of `nbytes` treated as a single row.
StickLayout flat_stick_layout(size_t nbytes);
// Layout of a dense tensor: the innermost dimension is the one with stride 1.
// Overlapping or gappy geometries fall back to the flat layout of their storage span.
StickLayout stick_layout(
    c10::IntArrayRef sizes,
    c10::IntArrayRef strides,
    size_t itemsize);

} // namespace spyre
