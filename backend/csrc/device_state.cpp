#include "device_state.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <string>

namespace spyre {

namespace {
c10::DeviceIndex read_device_count() noexcept {
  const char* env = std::getenv("SPYRE_DEVICE_COUNT");
  if (env == nullptr || *env == '\0') {
    return 1;
  }
  char* end = nullptr;
  long value = std::strtol(env, &end, 10);
  // The Python layer validates the variable before loading us; stay safe here.
  if (end == env || *end != '\0' || value < 1 || value > 64) {
    return 1;
  }
  return static_cast<c10::DeviceIndex>(value);
}

thread_local c10::DeviceIndex tls_current_device = 0;
} // namespace

c10::DeviceIndex device_count() noexcept {
  static const c10::DeviceIndex count = read_device_count();
  return count;
}

void check_device_index(c10::DeviceIndex index) {
  TORCH_CHECK(
      index >= 0 && index < device_count(),
      "Invalid spyre device index ",
      static_cast<int>(index),
      ": ",
      static_cast<int>(device_count()),
      " spyre device(s) available (indices 0..",
      static_cast<int>(device_count()) - 1,
      "; set SPYRE_DEVICE_COUNT before importing torch for more)");
}

c10::DeviceIndex current_device() {
  return tls_current_device;
}

void set_device(c10::DeviceIndex index) {
  check_device_index(index);
  tls_current_device = index;
}

c10::DeviceIndex exchange_device(c10::DeviceIndex index) {
  c10::DeviceIndex previous = tls_current_device;
  set_device(index);
  return previous;
}

c10::DeviceIndex resolve_device(c10::DeviceIndex index) {
  if (index < 0) {
    return current_device();
  }
  check_device_index(index);
  return index;
}

} // namespace spyre
