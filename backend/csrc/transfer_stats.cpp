#include "transfer_stats.h"

#include <atomic>

namespace spyre {

namespace {
std::atomic<int64_t> bytes_by_kind[3];
std::atomic<int64_t> count_by_kind[3];
} // namespace

void record_transfer(TransferKind kind, int64_t bytes) {
  auto k = static_cast<int>(kind);
  bytes_by_kind[k].fetch_add(bytes, std::memory_order_relaxed);
  count_by_kind[k].fetch_add(1, std::memory_order_relaxed);
}

TransferCounts transfer_counts() {
  TransferCounts counts;
  for (int k = 0; k < 3; ++k) {
    counts.bytes[k] = bytes_by_kind[k].load();
    counts.count[k] = count_by_kind[k].load();
  }
  return counts;
}

void reset_transfer_counts() {
  for (int k = 0; k < 3; ++k) {
    bytes_by_kind[k].store(0);
    count_by_kind[k].store(0);
  }
}

} // namespace spyre
