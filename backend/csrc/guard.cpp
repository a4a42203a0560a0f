// DeviceGuardImplInterface for spyre: N cards, thread-local current device,
// streams with simulated clocks, events that capture them.
#include "allocator.h"
#include "device_state.h"
#include "streams.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace spyre {

namespace {

void check_spyre(const c10::Device& d) {
  TORCH_CHECK(d.is_privateuseone(), "Expected a spyre device, but got ", d);
}

struct SpyreGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = c10::DeviceType::PrivateUse1;

  SpyreGuardImpl() = default;
  explicit SpyreGuardImpl(c10::DeviceType t) {
    TORCH_CHECK(t == static_type, "SpyreGuardImpl got device type ", t);
  }

  c10::DeviceType type() const override {
    return static_type;
  }

  c10::Device exchangeDevice(c10::Device d) const override {
    check_spyre(d);
    return c10::Device(static_type, spyre::exchange_device(d.index()));
  }

  c10::Device getDevice() const override {
    return c10::Device(static_type, spyre::current_device());
  }

  void setDevice(c10::Device d) const override {
    check_spyre(d);
    spyre::set_device(d.index());
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < spyre::device_count()) {
      spyre::set_device(d.index());
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    return spyre::current_stream(d.index());
  }

  c10::Stream getDefaultStream(c10::Device d) const override {
    return spyre::default_stream(d.index());
  }

  c10::Stream getNewStream(c10::Device d, int /*priority*/ = 0) const override {
    return spyre::new_stream(d.index());
  }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high*/ = false) const override {
    return spyre::new_stream(d.index());
  }

  c10::Stream exchangeStream(c10::Stream s) const override {
    return spyre::exchange_stream(s);
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    return spyre::device_count();
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device*/) const noexcept override {
    spyre::destroy_event(event);
  }

  void record(
      void** event,
      const c10::Stream& stream,
      const c10::DeviceIndex device_index,
      const c10::EventFlag /*flag*/) const override {
    TORCH_CHECK(
        device_index == -1 || device_index == stream.device_index(),
        "Event device index ", static_cast<int>(device_index),
        " does not match recording stream's device index ",
        static_cast<int>(stream.device_index()), ".");
    spyre::record_event(event, stream);
  }

  void block(void* event, const c10::Stream& stream) const override {
    spyre::block_on_event(event, stream);
  }

  // Work is executed synchronously, so recorded work is always complete.
  bool queryEvent(void* /*event*/) const override {
    return true;
  }

  bool queryStream(const c10::Stream& /*stream*/) const override {
    return true;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    allocator().synchronize(stream.device_index(), stream.id());
  }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) {
      auto* sim_event = static_cast<spyre::SimEvent*>(event);
      allocator().synchronize(sim_event->device, sim_event->stream_id);
    }
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    allocator().synchronize(spyre::resolve_device(device_index), -1);
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream)
      const override {
    allocator().record_stream(data_ptr, stream);
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device*/)
      const override {
    return spyre::event_elapsed_ms(start, end);
  }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, SpyreGuardImpl);

} // namespace spyre
