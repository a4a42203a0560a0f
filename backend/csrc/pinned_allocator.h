// Pinned ("page-locked") host memory for spyre transfers. On the simulator it
// is ordinary host memory whose pointers are remembered so is_pinned() works.
#pragma once
#include <c10/core/Allocator.h>

namespace spyre {

c10::Allocator& pinned_allocator();
bool is_pinned_ptr(const void* ptr);

} // namespace spyre
