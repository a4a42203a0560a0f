// Device enumeration and the thread-local current device of the simulated cards.
#pragma once
#include <c10/core/Device.h>

namespace spyre {

// Number of simulated cards: SPYRE_DEVICE_COUNT (default 1), read once.
c10::DeviceIndex device_count() noexcept;
// Raises a clear error when `index` does not name an existing card.
void check_device_index(c10::DeviceIndex index);
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);
// Sets the current device and returns the previous one.
c10::DeviceIndex exchange_device(c10::DeviceIndex index);
// -1 (the "current device" placeholder) resolves to the current device.
c10::DeviceIndex resolve_device(c10::DeviceIndex index);

} // namespace spyre
