// Host-memory allocator for spyre cards: per-device accounting, a capacity per
// card, 128-byte stick padding, stream-aware deferred frees (record_stream), and
// a cache of small freed blocks reused by later allocations (as CUDA's caching
// allocator does), so small ops do not pay the host malloc/free each time.
// A c10::DeviceAllocator, so torch.accelerator's memory APIs work on spyre.
#pragma once
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <string>

namespace spyre {

struct DeviceMemoryStats {
  int64_t allocated_bytes = 0;       // padded bytes currently held
  int64_t allocated_bytes_peak = 0;
  int64_t allocated_bytes_total = 0; // padded bytes ever allocated
  int64_t freed_bytes_total = 0;
  int64_t requested_bytes = 0;       // logical bytes currently held
  int64_t requested_bytes_peak = 0;
  int64_t padding_bytes = 0;         // allocated - requested
  int64_t pending_free_bytes = 0;    // freed but still used by a recorded stream
  int64_t reserved_bytes = 0;        // host bytes held: live, pending and cached blocks
  int64_t reserved_bytes_peak = 0;
  int64_t cached_bytes = 0;          // freed small blocks kept for reuse
  int64_t cached_blocks = 0;
  int64_t cache_hits = 0;            // allocations served from the cache
  int64_t host_allocs = 0;           // blocks taken from the host allocator
  int64_t host_frees = 0;            // blocks returned to it
  int64_t host_alloc_bytes_total = 0;
  int64_t host_freed_bytes_total = 0;
  int64_t host_blocks = 0;           // blocks held from the host now (live, pending, cached)
  int64_t num_allocs = 0;
  int64_t num_frees = 0;
  int64_t num_ooms = 0;
  int64_t live_blocks = 0;           // blocks held now (not reset with the accumulated counters)
  int64_t capacity = 0;
};

class SpyreAllocator final : public c10::DeviceAllocator {
 public:
  // Generic path (storage resize, UntypedStorage): a flat buffer padded to sticks.
  c10::DataPtr allocate(size_t nbytes) override;
  // Tensor path: `padded_bytes` follows the tensor's stick layout.
  c10::DataPtr allocate_padded(size_t nbytes, size_t padded_bytes);
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  // Keep the block of `data_ptr` alive until `stream` is synchronized.
  void record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream);
  // Release deferred blocks once `stream` (or, with id < 0, the whole device) synchronized.
  void synchronize(c10::DeviceIndex device, c10::StreamId stream_id);

  // c10::DeviceAllocator: what torch.accelerator.memory_stats() & co. call.
  bool initialized() override {
    return true;
  }
  // Returns every cached block of every card to the host. Blocks kept alive by
  // record_stream still wait for their stream, as on CUDA.
  void emptyCache(c10::MempoolId_t mempool_id) override {
    empty_cache();
  }
  void recordStream(const c10::DataPtr& data_ptr, c10::Stream stream) override {
    record_stream(data_ptr, stream);
  }
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override {
    reset_peak(device);
  }
  // (free, total) bytes of the card: capacity minus what is allocated, and the capacity.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;

  void empty_cache();
  DeviceMemoryStats stats(c10::DeviceIndex device);
  void reset_peak(c10::DeviceIndex device);
  void set_capacity(c10::DeviceIndex device, int64_t bytes);
  int64_t capacity(c10::DeviceIndex device);
  // Device of a pointer this allocator handed out, or -1.
  c10::DeviceIndex device_of(const void* ptr);
};

SpyreAllocator& allocator();
// SPYRE_MEMORY_CAPACITY parsed (bytes, or a number with K/M/G/T[i]B suffix); default 128 GiB.
int64_t default_capacity();
// Freed blocks up to this size are cached for reuse; larger ones go back to the host.
constexpr size_t kMaxCachedBlockBytes = size_t{1} << 20;
// Cached bytes per card; a free that would exceed it returns the block to the host.
constexpr int64_t kMaxCachedBytesPerDevice = int64_t{64} << 20;
// Bytes a block of `padded_bytes` occupies: small blocks round up to a size class
// (128-byte steps to 1 KiB, then four classes per power of two, <= 25% slack) so
// a cached block fits requests of nearby sizes; larger blocks are exact.
size_t block_class_bytes(size_t padded_bytes);
// Parses a capacity such as 1073741824, 512MiB or 128GiB; raises a clear error otherwise.
int64_t parse_capacity(const std::string& text);

} // namespace spyre
