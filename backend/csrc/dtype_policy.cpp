#include "dtype_policy.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <bitset>
#include <mutex>

namespace spyre {

namespace {
constexpr size_t kMaxScalarTypes = 64;
std::mutex policy_mutex;
std::bitset<kMaxScalarTypes> denied;
// Fast path for the common case of an empty deny-list.
std::atomic<bool> any_denied{false};
} // namespace

void set_unsupported_dtypes(const std::vector<c10::ScalarType>& dtypes) {
  std::lock_guard<std::mutex> lock(policy_mutex);
  denied.reset();
  for (auto dtype : dtypes) {
    auto index = static_cast<size_t>(dtype);
    TORCH_CHECK(index < kMaxScalarTypes, "unknown dtype ", dtype);
    denied.set(index);
  }
  any_denied.store(denied.any());
}

std::vector<c10::ScalarType> unsupported_dtypes() {
  std::lock_guard<std::mutex> lock(policy_mutex);
  std::vector<c10::ScalarType> result;
  for (size_t i = 0; i < kMaxScalarTypes; ++i) {
    if (denied.test(i)) {
      result.push_back(static_cast<c10::ScalarType>(i));
    }
  }
  return result;
}

void check_dtype_supported(c10::ScalarType dtype) {
  if (!any_denied.load(std::memory_order_relaxed)) {
    return;
  }
  bool is_denied = false;
  {
    std::lock_guard<std::mutex> lock(policy_mutex);
    is_denied = denied.test(static_cast<size_t>(dtype));
  }
  TORCH_CHECK(!is_denied, "Spyre backend does not support dtype ", c10::toString(dtype));
}

} // namespace spyre
