// The simulator's per-op bookkeeping for ops the host fallback runs without entering Python.
//
// The model is spyre_device/sim (cost.py: the roofline formulas; engine.py: which op is costed how;
// stats.py: the totals). Python "arms" an op once it has planned it (status, cost family,
// flops per element, its stats record's slot); from then on the C++ fallback costs each call
// with the same formulas and accumulates into per-slot totals, which Python drains lazily when
// someone reads torch.spyre.sim.stats().
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace spyre::sim {

// cost.CostModel's constants (Python passes the derived values it uses).
struct CostConstants {
  int64_t stick_bytes = 128, cores = 32;
  double launch_seconds = 0, vector_flops = 1;  // every op; the vector units
  double peak_ops_int8 = 1, peak_flops_fp16 = 1, peak_flops_fp32 = 1;  // the PE arrays
  double lpddr5_bytes_per_second = 1, usable_scratchpad_bytes = 1;  // card memory
  double ring_latency_seconds = 0, ring_broadcast_bytes_per_second = 1;  // the bi-directional ring
  double pcie_bytes_per_second = 1, pcie_latency_seconds = 0;  // host fallbacks
};

enum class CostKind : int { kNone = 0, kElementwise, kReduction, kNormalization, kMatmul, kCopy, kGather };
enum class Reduced : int { kNone = 0, kMatmul, kAddmm };  // precision.REDUCED_PRECISION_KERNELS

struct OpPlan {
  int64_t slot = -1;  // the stats record (a native or fallback OpRecord)
  bool fallback = false;  // costed as PCIe transfers, not on the card
  CostKind kind = CostKind::kElementwise;
  double flops_per_element = 1.0;
  Reduced reduced = Reduced::kNone;
};

struct Totals {
  int64_t count = 0;
  double sim_seconds = 0, flops = 0, host_seconds = 0;
  int64_t bytes_moved = 0;
};

struct GlobalTotals {
  double sim_seconds = 0;
  int64_t device_to_host_count = 0, device_to_host_bytes = 0;
  int64_t host_to_device_count = 0, host_to_device_bytes = 0;
  int64_t reduced_precision_matmul = 0;  // stats.policies
  int64_t int64_downcast = 0;
};

void set_constants(const CostConstants& constants);

// Policies the per-call decisions depend on (engine.Simulator's settings). `int64_warned`: the
// once-per-process int64 warning has been given (by Python), so C++ may apply the policy itself.
struct Policies {
  bool reduced_precision = true;
  bool int64_downcast = true;
  bool int64_warned = false;
};
void set_policies(const Policies& policies);
Policies policies();

// precision.Int64Policy.wrap_: an int64 result's values wrapped into the int32 range in place, as
// the card stores them; counted in stats.policies["int64_downcast"] when a value changed.
void wrap_int64(const at::Tensor& t);

// Costs one call and adds it to the plan's slot and the global totals; advances the simulated
// clock of the current stream of the card the op ran on.
void account(
    const OpPlan& plan,
    const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& outputs,
    double host_seconds,
    bool reduced_matmul_policy);

// Pending totals since the last drain (then zeroed): per slot, and global.
std::pair<std::vector<std::pair<int64_t, Totals>>, GlobalTotals> drain();

} // namespace spyre::sim
