// Binary pointwise kernels (demo excerpt).
#include <ATen/native/BinaryOps.h>

namespace at::native {

TORCH_IMPL_FUNC(maximum_out) (const Tensor& self, const Tensor& other, const Tensor& result) {
  maximum_stub(device_type(), *this);
}

TORCH_IMPL_FUNC(atan2_out) (const Tensor& self, const Tensor& other, const Tensor& result) {
  atan2_stub(device_type(), *this);
}

} // namespace at::native
