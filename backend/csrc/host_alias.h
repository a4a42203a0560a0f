// Zero-copy bridges between spyre tensors and CPU tensors over the same host
// memory, used by the Python fallback to run aten ops on the host.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <vector>

namespace spyre {

// CPU tensors aliasing each spyre tensor (same memory, geometry, conj/neg bits).
// Tensors sharing a spyre storage share one CPU storage, so aliasing is visible
// to the host kernel. Undefined or non-spyre entries pass through unchanged.
std::vector<at::Tensor> host_aliases(const std::vector<at::Tensor>& tensors);

// The same, appended to `out`: the fallback's per-op form, with no heap-allocated list for the few
// tensors of one op.
void host_aliases_into(c10::ArrayRef<at::Tensor> tensors, c10::SmallVectorImpl<at::Tensor>& out);

// A spyre tensor over `base`'s storage with `host_view`'s geometry and dtype.
at::Tensor device_view(const at::Tensor& base, const at::Tensor& host_view);

// A new spyre tensor on `device` holding a copy of `host` (not counted as a
// transfer: it materialises a fallback result).
at::Tensor adopt_host_tensor(const at::Tensor& host, c10::DeviceIndex device);

} // namespace spyre
