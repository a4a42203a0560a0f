// Random generators of the spyre cards. Random ops run on the host, so each
// spyre generator owns a CPU generator whose state *is* the spyre state: the
// fallback hands that CPU generator to the host kernel.
#pragma once
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include "torch_compat.h"

namespace spyre {

class SpyreGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit SpyreGeneratorImpl(c10::DeviceIndex device);
  SpyreGeneratorImpl(c10::DeviceIndex device, c10::intrusive_ptr<at::CPUGeneratorImpl> host);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
#if SPYRE_TORCH_HAS_PHILOX_STATE
  // A spyre generator is a CPU (mt19937) stream, not Philox: refuse, naming the device.
  void philox_state(
      uint64_t increment,
      at::Tensor& seed,
      at::Tensor& offset,
      at::Tensor& intragraph_offset) override;
#endif

  at::Generator host_generator() const;

 private:
  SpyreGeneratorImpl* clone_impl() const override;
  c10::intrusive_ptr<at::CPUGeneratorImpl> host_;
};

const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator new_generator(c10::DeviceIndex device);
// The CPU generator behind a spyre generator (what the host kernel must use).
at::Generator host_generator_of(const at::Generator& generator);

} // namespace spyre
