// PrivateUse1HooksInterface: availability, device count, generators, pinned
// host memory and storage resizing for spyre.
#include "allocator.h"
#include "device_state.h"
#include "generator.h"
#include "pinned_allocator.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>

namespace spyre {

namespace {

struct SpyreHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return device_count() > 0;
  }
  bool hasPrimaryContext(c10::DeviceIndex /*device*/) const override {
    return true;
  }
  c10::DeviceIndex deviceCount() const override {
    return device_count();
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    set_device(device);
  }
  c10::DeviceIndex getCurrentDevice() const override {
    return current_device();
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return spyre::exchange_device(device);
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    if (device < 0 || device >= device_count()) {
      return current_device();
    }
    return spyre::exchange_device(device);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return new_generator(device);
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    return &pinned_allocator();
  }
  bool isPinnedPtr(const void* data) const override {
    return is_pinned_ptr(data);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    auto device = allocator().device_of(data);
    TORCH_CHECK(device >= 0, "pointer ", data, " was not allocated on a spyre device");
    return at::Device(c10::DeviceType::PrivateUse1, device);
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "Trying to resize spyre storage that is not resizable");
    const c10::DeviceIndex device = impl->device().index();
    const c10::DeviceIndex previous = spyre::exchange_device(device);
    c10::DataPtr fresh = allocator().allocate(new_bytes);
    spyre::set_device(previous);
    const size_t keep = std::min(new_bytes, impl->nbytes());
    if (keep > 0) {
      std::memcpy(fresh.get(), impl->data(), keep);
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(new_bytes);
  }
};

struct RegisterHooks {
  RegisterHooks() {
    at::RegisterPrivateUse1HooksInterface(new SpyreHooks());
  }
} register_hooks;

} // namespace

} // namespace spyre
