#include "streams.h"

#include "device_state.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace spyre {

namespace {
using ClockKey = std::pair<c10::DeviceIndex, c10::StreamId>;

std::mutex clock_mutex;
std::map<ClockKey, double> clocks;
std::atomic<c10::StreamId> next_stream_id{1};

// Per-thread current stream id for each device (0 = the default stream). A plain array: a
// thread_local map needs an initialisation check and a hash lookup on every read, and the autograd
// engine and the simulator's costing read the current stream several times per op.
constexpr int kMaxDevices = 64;  // SPYRE_DEVICE_COUNT's upper bound (device_state.cpp)
thread_local c10::StreamId tls_current_streams[kMaxDevices] = {};

c10::Stream make_stream(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(
      c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

void check_stream(const c10::Stream& stream) {
  TORCH_CHECK(
      stream.device_type() == c10::DeviceType::PrivateUse1,
      "Expected a spyre stream, got a stream of device ",
      stream.device());
  check_device_index(stream.device_index());
}
} // namespace

c10::Stream default_stream(c10::DeviceIndex device) {
  return make_stream(resolve_device(device), 0);
}

c10::Stream new_stream(c10::DeviceIndex device) {
  return make_stream(resolve_device(device), next_stream_id.fetch_add(1));
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = resolve_device(device);
  return make_stream(device, tls_current_streams[device]);
}

c10::Stream exchange_stream(const c10::Stream& stream) {
  check_stream(stream);
  c10::Stream previous = current_stream(stream.device_index());
  tls_current_streams[stream.device_index()] = stream.id();
  return previous;
}

double stream_clock(const c10::Stream& stream) {
  check_stream(stream);
  std::lock_guard<std::mutex> lock(clock_mutex);
  auto it = clocks.find({stream.device_index(), stream.id()});
  return it == clocks.end() ? 0.0 : it->second;
}

void advance_stream_clock(const c10::Stream& stream, double seconds) {
  check_stream(stream);
  TORCH_CHECK(seconds >= 0.0, "simulated time only moves forward, got ", seconds, " s");
  std::lock_guard<std::mutex> lock(clock_mutex);
  clocks[{stream.device_index(), stream.id()}] += seconds;
}

void wait_until(const c10::Stream& stream, double time) {
  check_stream(stream);
  std::lock_guard<std::mutex> lock(clock_mutex);
  double& clock = clocks[{stream.device_index(), stream.id()}];
  clock = std::max(clock, time);
}

void record_event(void** event, const c10::Stream& stream) {
  auto* sim_event = static_cast<SimEvent*>(*event);
  if (sim_event == nullptr) {
    sim_event = new SimEvent();
    *event = sim_event;
  }
  sim_event->device = stream.device_index();
  sim_event->stream_id = stream.id();
  sim_event->time = stream_clock(stream);
}

void block_on_event(void* event, const c10::Stream& stream) {
  if (event == nullptr) {
    return;
  }
  wait_until(stream, static_cast<SimEvent*>(event)->time);
}

void destroy_event(void* event) noexcept {
  delete static_cast<SimEvent*>(event);
}

double event_elapsed_ms(void* start, void* end) {
  TORCH_CHECK(
      start != nullptr && end != nullptr,
      "Both spyre events must be recorded before calculating elapsed time.");
  auto* first = static_cast<SimEvent*>(start);
  auto* second = static_cast<SimEvent*>(end);
  return (second->time - first->time) * 1000.0;
}

} // namespace spyre
