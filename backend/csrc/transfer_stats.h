// Counters of bytes copied between host and spyre cards by _copy_from.
#pragma once
#include <cstdint>

namespace spyre {

enum class TransferKind { HostToDevice = 0, DeviceToHost = 1, DeviceToDevice = 2 };

struct TransferCounts {
  int64_t bytes[3] = {0, 0, 0};
  int64_t count[3] = {0, 0, 0};
};

void record_transfer(TransferKind kind, int64_t bytes);
TransferCounts transfer_counts();
void reset_transfer_counts();

} // namespace spyre
