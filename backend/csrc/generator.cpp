#include "generator.h"

#include "device_state.h"

#include <c10/util/Exception.h>

#include <mutex>
#include <vector>

namespace spyre {

SpyreGeneratorImpl::SpyreGeneratorImpl(c10::DeviceIndex device)
    : SpyreGeneratorImpl(
          device,
          c10::make_intrusive<at::CPUGeneratorImpl>(c10::default_rng_seed_val)) {}

SpyreGeneratorImpl::SpyreGeneratorImpl(
    c10::DeviceIndex device,
    c10::intrusive_ptr<at::CPUGeneratorImpl> host)
    : c10::GeneratorImpl(
          c10::Device(c10::DeviceType::PrivateUse1, device),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      host_(std::move(host)) {}

void SpyreGeneratorImpl::set_current_seed(uint64_t seed) {
  host_->set_current_seed(seed);
}

void SpyreGeneratorImpl::set_offset(uint64_t offset) {
  host_->set_offset(offset);
}

uint64_t SpyreGeneratorImpl::get_offset() const {
  return host_->get_offset();
}

uint64_t SpyreGeneratorImpl::current_seed() const {
  return host_->current_seed();
}

uint64_t SpyreGeneratorImpl::seed() {
  return host_->seed();
}

void SpyreGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  host_->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> SpyreGeneratorImpl::get_state() const {
  return host_->get_state();
}

#if SPYRE_TORCH_HAS_PHILOX_STATE
void SpyreGeneratorImpl::philox_state(
    uint64_t /*increment*/,
    at::Tensor& /*seed*/,
    at::Tensor& /*offset*/,
    at::Tensor& /*intragraph_offset*/) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      false,
      "philox_state is not supported by spyre generators: spyre random ops draw from the card's ",
      "CPU (mt19937) generator stream, which has no Philox state");
}
#endif

at::Generator SpyreGeneratorImpl::host_generator() const {
  return at::Generator(host_);
}

SpyreGeneratorImpl* SpyreGeneratorImpl::clone_impl() const {
  auto host_clone = c10::make_intrusive<at::CPUGeneratorImpl>();
  host_clone->set_state(*host_->get_state());
  return new SpyreGeneratorImpl(device().index(), std::move(host_clone));
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::vector<at::Generator>* generators = nullptr;
  std::call_once(once, [] {
    generators = new std::vector<at::Generator>();
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      generators->push_back(at::make_generator<SpyreGeneratorImpl>(i));
    }
  });
  return generators->at(resolve_device(device));
}

at::Generator new_generator(c10::DeviceIndex device) {
  return at::make_generator<SpyreGeneratorImpl>(resolve_device(device));
}

at::Generator host_generator_of(const at::Generator& generator) {
  TORCH_CHECK(
      generator.defined() && generator.device().type() == c10::DeviceType::PrivateUse1,
      "expected a spyre generator, got one for ",
      generator.defined() ? generator.device().str() : std::string("nothing"));
  return generator.get<SpyreGeneratorImpl>()->host_generator();
}

} // namespace spyre
