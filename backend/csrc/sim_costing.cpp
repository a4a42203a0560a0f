#include "sim_costing.h"

#include "device_state.h"
#include "streams.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <vector>

namespace spyre::sim {

namespace {

std::mutex g_mutex;  // guards everything below
CostConstants g_constants;
Policies g_policies;
std::vector<Totals> g_pending;  // by slot
GlobalTotals g_global;
// g_policies' flags, for the per-call reads (policies()) that need no lock.
std::atomic<bool> g_reduced_precision{Policies{}.reduced_precision};
std::atomic<bool> g_int64_downcast{Policies{}.int64_downcast};
std::atomic<bool> g_int64_warned{Policies{}.int64_warned};

struct Cost {
  double seconds = 0;
  double flops = 0;
  int64_t bytes_moved = 0;
};

// cost.CostModel.tensor_bytes: the innermost dimension rounded up to whole sticks.
int64_t tensor_bytes(const at::Tensor& t, int64_t stick) {
  if (t.dim() == 0) {
    return stick;
  }
  const int64_t last = t.size(-1);
  if (last == 0) {
    return 0;
  }
  const int64_t row_bytes = last * static_cast<int64_t>(t.element_size());
  return (t.numel() / last) * (((row_bytes + stick - 1) / stick) * stick);
}

int64_t total_bytes(const std::vector<at::Tensor>& ts, size_t from, int64_t stick) {
  int64_t sum = 0;
  for (size_t i = from; i < ts.size(); ++i) {
    sum += tensor_bytes(ts[i], stick);
  }
  return sum;
}

double matrix_peak(const CostConstants& c, at::ScalarType dtype, bool reduced) {
  if (dtype == at::kChar || dtype == at::kByte) {
    return c.peak_ops_int8;
  }
  if (dtype == at::kHalf || dtype == at::kBFloat16 || reduced) {
    return c.peak_flops_fp16;
  }
  return c.peak_flops_fp32;
}

// cost.CostModel._matmul, term for term.
Cost matmul_cost(const CostConstants& c, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs,
                 bool reduced) {
  std::vector<at::Tensor> operands;
  for (const auto& t : inputs) {
    if (t.dim() >= 1) {
      operands.push_back(t);
    }
  }
  if (operands.size() < 2 || outputs.empty()) {
    return {c.launch_seconds, 0.0, 0};
  }
  const auto& a = operands[operands.size() - 2];
  const auto& b = operands.back();
  int64_t bias_bytes = 0;
  for (size_t i = 0; i + 2 < operands.size(); ++i) {
    bias_bytes += tensor_bytes(operands[i], c.stick_bytes);
  }
  const auto& out = outputs[0];
  const double flops = 2.0 * static_cast<double>(out.numel()) * static_cast<double>(a.size(-1));
  const int64_t a_bytes = tensor_bytes(a, c.stick_bytes);
  const int64_t b_bytes = tensor_bytes(b, c.stick_bytes);
  const int64_t c_bytes = tensor_bytes(out, c.stick_bytes);
  const int64_t passes = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(static_cast<double>(b_bytes) / c.usable_scratchpad_bytes)));
  const int64_t moved = a_bytes * passes + b_bytes + c_bytes + bias_bytes;
  const double ring = static_cast<double>(a_bytes * passes) / c.ring_broadcast_bytes_per_second + c.ring_latency_seconds;
  const double compute = flops / matrix_peak(c, a.scalar_type(), reduced);
  const double memory = static_cast<double>(moved) / c.lpddr5_bytes_per_second;
  return {c.launch_seconds + std::max(compute, memory) + ring, flops, moved};
}

bool same_storage(const at::Tensor& a, const at::Tensor& b) {
  return a.storage().data() == b.storage().data();
}

// cost.CostModel.native, term for term (same operation order, so the same doubles).
Cost native_cost(const CostConstants& c, CostKind kind, double fpe, const std::vector<at::Tensor>& inputs,
                 const std::vector<at::Tensor>& outputs, bool reduced) {
  if (kind == CostKind::kNone) {
    return {};
  }
  if (kind == CostKind::kMatmul) {
    return matmul_cost(c, inputs, outputs, reduced);
  }
  const int64_t in_bytes = total_bytes(inputs, 0, c.stick_bytes);
  const int64_t out_bytes = total_bytes(outputs, 0, c.stick_bytes);
  double ring = 0.0, flops = 0.0;
  int64_t moved = 0;
  const int64_t first_numel = inputs.empty() ? 0 : inputs[0].numel();
  switch (kind) {
    case CostKind::kCopy:
      moved = outputs.empty() ? 0 : in_bytes + out_bytes;
      if (!outputs.empty() && !inputs.empty() && same_storage(outputs[0], inputs[0])) {
        moved = 0;  // a view: metadata only
      }
      break;
    case CostKind::kGather:
      moved = out_bytes * 2 + total_bytes(inputs, 1, c.stick_bytes);
      break;
    case CostKind::kReduction:
      flops = fpe * static_cast<double>(first_numel);
      moved = in_bytes + out_bytes;
      ring = static_cast<double>(out_bytes * (c.cores - 1)) /
              (static_cast<double>(c.cores) * c.ring_broadcast_bytes_per_second) +
          c.ring_latency_seconds;
      break;
    case CostKind::kNormalization: {
      flops = fpe * static_cast<double>(first_numel);
      const int64_t first = inputs.empty() ? 0 : tensor_bytes(inputs[0], c.stick_bytes);
      const int64_t reread = static_cast<double>(first) > c.usable_scratchpad_bytes ? first : 0;
      moved = in_bytes + reread + out_bytes;
      break;
    }
    default: {  // elementwise
      int64_t numel = 0;
      for (const auto& t : outputs) {
        numel += t.numel();
      }
      flops = fpe * static_cast<double>(numel);
      moved = in_bytes + out_bytes;
    }
  }
  const double seconds =
      c.launch_seconds + std::max(flops / c.vector_flops, static_cast<double>(moved) / c.lpddr5_bytes_per_second);
  return {seconds + ring, flops, moved};
}

} // namespace

void set_constants(const CostConstants& constants) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_constants = constants;
}

void set_policies(const Policies& policies) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_policies = policies;
  g_reduced_precision.store(policies.reduced_precision);
  g_int64_downcast.store(policies.int64_downcast);
  g_int64_warned.store(policies.int64_warned);
}

Policies policies() {
  // Read for every costed op: three flags, no lock.
  return {g_reduced_precision.load(std::memory_order_relaxed), g_int64_downcast.load(std::memory_order_relaxed),
          g_int64_warned.load(std::memory_order_relaxed)};
}

namespace {

// Whether every value of a dense int64 tensor already fits int32 (then wrapping changes nothing):
// one read-only pass instead of two conversions and a comparison.
bool fits_int32(const at::Tensor& t) {
  if (!t.is_cpu() || !t.is_non_overlapping_and_dense()) {
    return false;  // unknown: the general path decides
  }
  const int64_t* values = t.const_data_ptr<int64_t>();  // dense: numel values from here
  bool fits = true;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    fits &= values[i] == static_cast<int64_t>(static_cast<int32_t>(values[i]));
  }
  return fits;
}

} // namespace

void wrap_int64(const at::Tensor& t) {
  if (!t.defined() || t.scalar_type() != at::kLong || t.numel() == 0 || fits_int32(t)) {
    return;
  }
  const auto narrowed = t.to(at::kInt).to(at::kLong);
  if (at::equal(narrowed, t)) {
    return;
  }
  try {
    t.copy_(narrowed);
  } catch (const c10::Error&) {  // an overlapping view (e.g. expanded): its base holds the values
    return;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_global.int64_downcast += 1;
}

void account(
    const OpPlan& plan,
    const std::vector<at::Tensor>& inputs,
    const std::vector<at::Tensor>& outputs,
    double host_seconds,
    bool reduced_matmul_policy) {
  double seconds = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto& c = g_constants;
    if (static_cast<size_t>(plan.slot) >= g_pending.size()) {
      g_pending.resize(plan.slot + 1);
    }
    auto& record = g_pending[plan.slot];
    if (plan.fallback) {  // engine.after_op: PCIe both ways instead of card time
      const int64_t down = total_bytes(inputs, 0, c.stick_bytes);
      const int64_t up = total_bytes(outputs, 0, c.stick_bytes);
      seconds = static_cast<double>(down + up) / c.pcie_bytes_per_second + 2 * c.pcie_latency_seconds;
      g_global.device_to_host_count += 1;
      g_global.device_to_host_bytes += down;
      g_global.host_to_device_count += 1;
      g_global.host_to_device_bytes += up;
      record.bytes_moved += down + up;
    } else {
      const auto cost = native_cost(c, plan.kind, plan.flops_per_element, inputs, outputs, g_policies.reduced_precision);
      seconds = cost.seconds;
      record.flops += cost.flops;
      record.bytes_moved += cost.bytes_moved;
    }
    record.count += 1;
    record.sim_seconds += seconds;
    record.host_seconds += host_seconds;
    g_global.sim_seconds += seconds;
    g_global.reduced_precision_matmul += reduced_matmul_policy ? 1 : 0;
  }
  if (seconds != 0) {
    const auto& anchor = outputs.empty() ? inputs : outputs;
    const c10::DeviceIndex device = anchor.empty() ? current_device() : anchor[0].device().index();
    advance_stream_clock(current_stream(device), seconds);
  }
}

std::pair<std::vector<std::pair<int64_t, Totals>>, GlobalTotals> drain() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::pair<int64_t, Totals>> slots;
  for (size_t i = 0; i < g_pending.size(); ++i) {
    if (g_pending[i].count != 0) {
      slots.emplace_back(static_cast<int64_t>(i), g_pending[i]);
    }
  }
  g_pending.clear();
  GlobalTotals global = g_global;
  g_global = GlobalTotals{};
  return {std::move(slots), global};
}

} // namespace spyre::sim
