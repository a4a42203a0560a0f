// Streams and events of the simulated cards. Work runs synchronously on the
// host, so ordering is always satisfied; each stream carries a simulated
// clock (seconds) that the simulator advances and events capture.
#pragma once
#include <c10/core/Stream.h>

namespace spyre {

c10::Stream default_stream(c10::DeviceIndex device);
c10::Stream new_stream(c10::DeviceIndex device);
c10::Stream current_stream(c10::DeviceIndex device);
// Makes `stream` current on its device for this thread; returns the previous one.
c10::Stream exchange_stream(const c10::Stream& stream);

double stream_clock(const c10::Stream& stream);
void advance_stream_clock(const c10::Stream& stream, double seconds);
// The stream's clock becomes max(its clock, `time`): waiting on earlier work.
void wait_until(const c10::Stream& stream, double time);

struct SimEvent {
  c10::DeviceIndex device = 0;
  c10::StreamId stream_id = 0;
  double time = 0.0;  // simulated seconds at record time
};

void record_event(void** event, const c10::Stream& stream);
void block_on_event(void* event, const c10::Stream& stream);
void destroy_event(void* event) noexcept;
// Simulated milliseconds between two recorded events.
double event_elapsed_ms(void* start, void* end);

} // namespace spyre
