#include "pinned_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

namespace spyre {

namespace {
std::mutex mutex;
std::unordered_map<const void*, size_t> pinned;  // base pointer -> size

void free_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    pinned.erase(ptr);
  }
  c10::free_cpu(ptr);
}

struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) {
      return c10::DataPtr(nullptr, nullptr, &free_pinned, c10::Device(c10::DeviceType::CPU));
    }
    void* ptr = c10::alloc_cpu(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex);
      pinned[ptr] = nbytes;
    }
    return c10::DataPtr(ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &free_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
} // namespace

c10::Allocator& pinned_allocator() {
  static auto* instance = new PinnedAllocator();
  return *instance;
}

bool is_pinned_ptr(const void* ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  // Interior pointers of a pinned block count as pinned too.
  for (const auto& [base, size] : pinned) {
    auto* begin = static_cast<const char*>(base);
    if (ptr >= begin && ptr < begin + size) {
      return true;
    }
  }
  return false;
}

} // namespace spyre
