#include "allocator.h"

#include "device_state.h"
#include "sticks.h"
#include "streams.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace spyre {

namespace {

// A handful of stream ids, inline: a std::set cost a heap node per allocation.
class StreamSet {
 public:
  void insert(c10::StreamId id) {
    if (std::find(ids_.begin(), ids_.end(), id) == ids_.end()) {
      ids_.push_back(id);
    }
  }
  void erase(c10::StreamId id) {
    ids_.erase(std::remove(ids_.begin(), ids_.end(), id), ids_.end());
  }
  void clear() {
    ids_.clear();
  }
  bool empty() const {
    return ids_.empty();
  }

 private:
  c10::SmallVector<c10::StreamId, 2> ids_;
};

struct Block {
  void* ptr = nullptr;
  c10::DeviceIndex device = 0;
  size_t bytes = 0;      // what the host gave (the size class for small blocks)
  size_t requested = 0;
  size_t padded = 0;
  bool cached = false;   // freed and waiting in a free list for reuse
  c10::StreamId alloc_stream = 0;
  StreamSet used_by;  // the allocating stream and streams recorded with record_stream
};

std::mutex mutex;
std::vector<DeviceMemoryStats> device_stats;   // indexed by device
std::unordered_map<const void*, Block*> live;  // pointer -> block held from the host, for lookups
std::vector<Block*> pending;                   // freed, waiting for streams
// Per device: size class -> cached blocks (last freed on top, the warmest in the CPU caches).
using FreeLists = std::unordered_map<size_t, std::vector<Block*>>;
std::vector<FreeLists> free_lists;             // indexed by device

std::string human_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(unit == 0 ? 0 : 2) << value << " " << units[unit];
  return out.str();
}

DeviceMemoryStats& stats_for(c10::DeviceIndex device) {
  // Called with `mutex` held.
  if (device_stats.empty()) {
    device_stats.resize(device_count());
    free_lists.resize(device_stats.size());
    for (auto& s : device_stats) {
      s.capacity = default_capacity();
    }
  }
  return device_stats.at(device);
}

// Gives a block's memory back to the host. Called with `mutex` held.
void host_free_locked(Block* block) {
  auto& s = stats_for(block->device);
  s.reserved_bytes -= static_cast<int64_t>(block->bytes);
  s.host_freed_bytes_total += static_cast<int64_t>(block->bytes);
  s.host_frees += 1;
  s.host_blocks -= 1;
  live.erase(block->ptr);
  c10::free_cpu(block->ptr);
  delete block;
}

// A cached block of exactly `bytes` on `device`, or nullptr. Called with `mutex` held.
Block* take_cached_locked(c10::DeviceIndex device, size_t bytes) {
  auto& lists = free_lists.at(device);
  auto it = lists.find(bytes);
  if (it == lists.end() || it->second.empty()) {
    return nullptr;
  }
  Block* block = it->second.back();
  it->second.pop_back();
  block->cached = false;
  auto& s = stats_for(device);
  s.cached_bytes -= static_cast<int64_t>(bytes);
  s.cached_blocks -= 1;
  s.cache_hits += 1;
  return block;
}

void empty_cache_locked(c10::DeviceIndex device) {
  stats_for(device);  // sizes free_lists on first use
  for (auto& [bytes, blocks] : free_lists.at(device)) {
    auto& s = stats_for(device);
    s.cached_bytes -= static_cast<int64_t>(bytes * blocks.size());
    s.cached_blocks -= static_cast<int64_t>(blocks.size());
    for (Block* block : blocks) {
      host_free_locked(block);
    }
    blocks.clear();
  }
}

// The block's user is gone and no recorded stream reads it any more: it stops
// counting as allocated and goes to its free list, or back to the host when it is
// large or the cache is full. Called with `mutex` held.
void release_locked(Block* block) {
  auto& s = stats_for(block->device);
  s.allocated_bytes -= static_cast<int64_t>(block->padded);
  s.requested_bytes -= static_cast<int64_t>(block->requested);
  s.padding_bytes = s.allocated_bytes - s.requested_bytes;
  s.freed_bytes_total += static_cast<int64_t>(block->padded);
  s.num_frees += 1;
  s.live_blocks -= 1;
  const auto bytes = static_cast<int64_t>(block->bytes);
  if (block->bytes > kMaxCachedBlockBytes || s.cached_bytes + bytes > kMaxCachedBytesPerDevice) {
    host_free_locked(block);
    return;
  }
  block->cached = true;
  free_lists.at(block->device)[block->bytes].push_back(block);
  s.cached_bytes += bytes;
  s.cached_blocks += 1;
}

void free_block(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  std::lock_guard<std::mutex> lock(mutex);
  block->used_by.erase(block->alloc_stream);
  if (block->used_by.empty()) {
    release_locked(block);
    return;
  }
  // Another stream may still read this memory: keep it until that stream syncs.
  stats_for(block->device).pending_free_bytes += static_cast<int64_t>(block->padded);
  pending.push_back(block);
}

void flush_pending_locked(c10::DeviceIndex device, c10::StreamId stream_id) {
  std::vector<Block*> still_pending;
  for (Block* block : pending) {
    if (block->device == device) {
      if (stream_id < 0) {
        block->used_by.clear();
      } else {
        block->used_by.erase(stream_id);
      }
    }
    if (block->used_by.empty()) {
      stats_for(block->device).pending_free_bytes -= static_cast<int64_t>(block->padded);
      release_locked(block);
    } else {
      still_pending.push_back(block);
    }
  }
  pending.swap(still_pending);
}

} // namespace

size_t block_class_bytes(size_t padded_bytes) {
  constexpr size_t kStep = 128;
  if (padded_bytes > kMaxCachedBlockBytes) {
    return padded_bytes;
  }
  if (padded_bytes <= 1024) {
    return std::max(kStep, (padded_bytes + kStep - 1) / kStep * kStep);
  }
  // Largest power of two below padded_bytes, split in four steps.
  size_t power = 1024;
  while (power * 2 < padded_bytes) {
    power *= 2;
  }
  const size_t step = power / 4;
  return (padded_bytes + step - 1) / step * step;
}

int64_t parse_capacity(const std::string& text) {
  size_t pos = 0;
  double number = 0.0;
  try {
    number = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string suffix = text.substr(pos);
  for (auto& c : suffix) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  double scale = 0.0;
  if (suffix.empty() || suffix == "B") scale = 1.0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") scale = 1024.0;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  TORCH_CHECK(
      pos > 0 && scale > 0.0 && number >= 0.0,
      "SPYRE_MEMORY_CAPACITY must be a byte count such as 1073741824, 512MiB or 128GiB, got '",
      text, "'");
  return static_cast<int64_t>(number * scale);
}

int64_t default_capacity() {
  static const int64_t capacity = [] {
    const char* env = std::getenv("SPYRE_MEMORY_CAPACITY");
    if (env == nullptr || *env == '\0') {
      return static_cast<int64_t>(128) << 30;
    }
    return parse_capacity(env);
  }();
  return capacity;
}

c10::DataPtr SpyreAllocator::allocate(size_t nbytes) {
  return allocate_padded(nbytes, static_cast<size_t>(flat_stick_layout(nbytes).padded_bytes));
}

c10::DataPtr SpyreAllocator::allocate_padded(size_t nbytes, size_t padded_bytes) {
  const c10::DeviceIndex device = current_device();
  const c10::Device spyre_device(c10::DeviceType::PrivateUse1, device);
  if (nbytes == 0) {
    return c10::DataPtr(nullptr, nullptr, &free_block, spyre_device);
  }
  std::unique_lock<std::mutex> lock(mutex);
  auto& s = stats_for(device);
  if (s.allocated_bytes + static_cast<int64_t>(padded_bytes) > s.capacity && !pending.empty()) {
    // Deferred blocks are only waiting for a sync; all work is complete, so reclaim them.
    flush_pending_locked(device, -1);
  }
  if (s.allocated_bytes + static_cast<int64_t>(padded_bytes) > s.capacity) {
    s.num_ooms += 1;
    const int64_t allocated = s.allocated_bytes;
    const int64_t capacity = s.capacity;
    lock.unlock();
    TORCH_CHECK_WITH(
        OutOfMemoryError,
        false,
        "Spyre out of memory: tried to allocate ",
        human_bytes(static_cast<int64_t>(padded_bytes)),
        " (padded to 128-byte sticks) on spyre:",
        static_cast<int>(device),
        ", which has ",
        human_bytes(allocated),
        " allocated of a ",
        human_bytes(capacity),
        " capacity. Free tensors or raise the capacity (SPYRE_MEMORY_CAPACITY or "
        "torch.spyre.set_memory_capacity).");
  }
  const size_t bytes = block_class_bytes(padded_bytes);
  Block* block = take_cached_locked(device, bytes);
  if (block == nullptr) {
    if (s.reserved_bytes + static_cast<int64_t>(bytes) > s.capacity) {
      empty_cache_locked(device);  // cached blocks yield to live allocations
    }
    void* ptr = nullptr;
    try {
      ptr = c10::alloc_cpu(bytes);
    } catch (const c10::Error&) {
      s.num_ooms += 1;
      lock.unlock();
      TORCH_CHECK_WITH(
          OutOfMemoryError,
          false,
          "Spyre out of memory: the host could not provide ",
          human_bytes(static_cast<int64_t>(bytes)),
          " for spyre:",
          static_cast<int>(device));
    }
    block = new Block();
    block->ptr = ptr;
    block->device = device;
    block->bytes = bytes;
    live[ptr] = block;
    s.reserved_bytes += static_cast<int64_t>(bytes);
    s.reserved_bytes_peak = std::max(s.reserved_bytes_peak, s.reserved_bytes);
    s.host_alloc_bytes_total += static_cast<int64_t>(bytes);
    s.host_allocs += 1;
    s.host_blocks += 1;
  }
  block->requested = nbytes;
  block->padded = padded_bytes;
  block->alloc_stream = current_stream(device).id();
  block->used_by.insert(block->alloc_stream);
  s.allocated_bytes += static_cast<int64_t>(padded_bytes);
  s.requested_bytes += static_cast<int64_t>(nbytes);
  s.padding_bytes = s.allocated_bytes - s.requested_bytes;
  s.allocated_bytes_total += static_cast<int64_t>(padded_bytes);
  s.allocated_bytes_peak = std::max(s.allocated_bytes_peak, s.allocated_bytes);
  s.requested_bytes_peak = std::max(s.requested_bytes_peak, s.requested_bytes);
  s.num_allocs += 1;
  s.live_blocks += 1;
  return c10::DataPtr(block->ptr, block, &free_block, spyre_device);
}

c10::DeleterFnPtr SpyreAllocator::raw_deleter() const {
  // Blocks carry their accounting in the context, so raw pointers cannot be freed alone.
  return nullptr;
}

void SpyreAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

void SpyreAllocator::record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  if (data_ptr.get() == nullptr || data_ptr.get_deleter() != &free_block) {
    return;
  }
  auto* block = static_cast<Block*>(data_ptr.get_context());
  std::lock_guard<std::mutex> lock(mutex);
  block->used_by.insert(stream.id());
}

void SpyreAllocator::synchronize(c10::DeviceIndex device, c10::StreamId stream_id) {
  std::lock_guard<std::mutex> lock(mutex);
  flush_pending_locked(device, stream_id);
}

void SpyreAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t device = 0; device < free_lists.size(); ++device) {
    empty_cache_locked(static_cast<c10::DeviceIndex>(device));
  }
}

DeviceMemoryStats SpyreAllocator::stats(c10::DeviceIndex device) {
  device = resolve_device(device);
  std::lock_guard<std::mutex> lock(mutex);
  return stats_for(device);
}

void SpyreAllocator::reset_peak(c10::DeviceIndex device) {
  device = resolve_device(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = stats_for(device);
  s.allocated_bytes_peak = s.allocated_bytes;
  s.requested_bytes_peak = s.requested_bytes;
  s.reserved_bytes_peak = s.reserved_bytes;
}

c10::CachingDeviceAllocator::DeviceStats SpyreAllocator::getDeviceStats(c10::DeviceIndex device) {
  const auto s = stats(device);
  c10::CachingDeviceAllocator::DeviceStats out;
  // One pool, so the aggregate row carries everything. Allocated bytes are stick-padded
  // bytes of live tensors; reserved bytes (and segments) are what is held from the host:
  // live blocks at their size class, blocks waiting for a recorded stream, and the cache.
  auto& allocated = out.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  allocated.current = s.allocated_bytes;
  allocated.peak = s.allocated_bytes_peak;
  allocated.allocated = s.allocated_bytes_total;
  allocated.freed = s.freed_bytes_total;
  auto& requested = out.requested_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  requested.current = s.requested_bytes;
  requested.peak = s.requested_bytes_peak;
  auto& reserved = out.reserved_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  reserved.current = s.reserved_bytes;
  reserved.peak = s.reserved_bytes_peak;
  reserved.allocated = s.host_alloc_bytes_total;
  reserved.freed = s.host_freed_bytes_total;
  auto& active = out.active_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  active = allocated;
  auto& count = out.allocation[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  count.current = s.live_blocks;
  count.allocated = s.num_allocs;
  count.freed = s.num_frees;
  count.peak = count.current;
  out.active = out.allocation;
  auto& segment = out.segment[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  segment.current = s.host_blocks;
  segment.allocated = s.host_allocs;
  segment.freed = s.host_frees;
  segment.peak = segment.current;
  out.num_ooms = s.num_ooms;
  out.num_device_alloc = s.host_allocs;
  out.num_device_free = s.host_frees;
  return out;
}

void SpyreAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  device = resolve_device(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = stats_for(device);
  s.allocated_bytes_total = 0;
  s.freed_bytes_total = 0;
  s.num_allocs = 0;
  s.num_frees = 0;
  s.num_ooms = 0;
  s.cache_hits = 0;
  s.host_allocs = 0;
  s.host_frees = 0;
  s.host_alloc_bytes_total = 0;
  s.host_freed_bytes_total = 0;
}

std::pair<size_t, size_t> SpyreAllocator::getMemoryInfo(c10::DeviceIndex device) {
  const auto s = stats(device);
  // As CUDA's driver sees it: cached blocks are held, so they are not free.
  const int64_t free_bytes = std::max<int64_t>(0, s.capacity - s.reserved_bytes);
  return {static_cast<size_t>(free_bytes), static_cast<size_t>(s.capacity)};
}

void SpyreAllocator::set_capacity(c10::DeviceIndex device, int64_t bytes) {
  device = resolve_device(device);
  TORCH_CHECK(bytes >= 0, "spyre memory capacity must be >= 0 bytes, got ", bytes);
  std::lock_guard<std::mutex> lock(mutex);
  stats_for(device).capacity = bytes;
}

int64_t SpyreAllocator::capacity(c10::DeviceIndex device) {
  return stats(device).capacity;
}

c10::DeviceIndex SpyreAllocator::device_of(const void* ptr) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(ptr);
  return it == live.end() || it->second->cached ? static_cast<c10::DeviceIndex>(-1) : it->second->device;
}

SpyreAllocator& allocator() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* instance = new SpyreAllocator();
  return *instance;
}

namespace {
struct RegisterAllocator {
  RegisterAllocator() {
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &allocator());
  }
} register_allocator;
} // namespace

} // namespace spyre
