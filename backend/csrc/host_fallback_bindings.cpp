// Python bindings of the C++ host fallback and the simulator's fast path (host_fallback.h,
// sim_costing.h, reduced_matmul.h); called from module.cpp.
#include "host_fallback.h"
#include "reduced_matmul.h"
#include "sim_costing.h"

#include <torch/extension.h>

#include <map>
#include <string>

namespace py = pybind11;

namespace spyre {

void bind_host_fallback(py::module& m) {
  m.def("_install_host_fallback", &install_host_fallback, py::arg("direct_ops"));
  m.def("_set_hook_mode", [](int mode) {
    TORCH_CHECK(mode >= 0 && mode <= 2, "hook mode must be 0, 1 or 2");
    set_hook_mode(static_cast<HookMode>(mode));
  });
  m.def("_set_inside_hooks", &set_inside_hooks);

  m.def("_sim_set_constants", [](const std::map<std::string, double>& d) {
    const auto get = [&](const char* name) { return d.at(name); };
    sim::CostConstants c;  // grouped as in the struct
    c.stick_bytes = static_cast<int64_t>(get("stick_bytes")), c.cores = static_cast<int64_t>(get("cores"));
    c.launch_seconds = get("launch_seconds"), c.vector_flops = get("vector_flops");
    c.peak_ops_int8 = get("peak_ops_int8"), c.peak_flops_fp16 = get("peak_flops_fp16");
    c.peak_flops_fp32 = get("peak_flops_fp32");
    c.lpddr5_bytes_per_second = get("lpddr5_bytes_per_second"), c.usable_scratchpad_bytes = get("usable_scratchpad_bytes");
    c.ring_latency_seconds = get("ring_latency_seconds");
    c.ring_broadcast_bytes_per_second = get("ring_broadcast_bytes_per_second");
    c.pcie_bytes_per_second = get("pcie_bytes_per_second"), c.pcie_latency_seconds = get("pcie_latency_seconds");
    sim::set_constants(c);
  });
  m.def(
      "_sim_set_policies",
      [](bool reduced_precision, bool int64_downcast, bool int64_warned) {
        sim::set_policies({reduced_precision, int64_downcast, int64_warned});
      },
      py::arg("reduced_precision"), py::arg("int64_downcast"), py::arg("int64_warned"));
  m.def(
      "_sim_arm",
      [](const std::string& name, const std::string& overload, int64_t slot, bool fallback, int kind,
         double flops_per_element, int reduced) {
        TORCH_CHECK(kind >= 0 && kind <= 6 && reduced >= 0 && reduced <= 2, "bad cost kind or reduced kernel");
        sim::OpPlan plan;
        plan.slot = slot;
        plan.fallback = fallback;
        plan.kind = static_cast<sim::CostKind>(kind);
        plan.flops_per_element = flops_per_element;
        plan.reduced = static_cast<sim::Reduced>(reduced);
        arm_op(name, overload, plan);
      });
  m.def("_sim_disarm_all", &disarm_all_ops);
  m.def("_note_reached_ops", &note_reached_ops);
  m.def("_take_reached_ops", &take_reached_ops);
  m.def("_sim_drain", [] {
    auto [slots, g] = sim::drain();
    py::list records;
    for (const auto& [slot, t] : slots) {
      records.append(py::make_tuple(slot, t.count, t.sim_seconds, t.flops, t.bytes_moved, t.host_seconds));
    }
    py::dict global;
    global["sim_seconds"] = g.sim_seconds;
    global["device_to_host"] = py::make_tuple(g.device_to_host_count, g.device_to_host_bytes);
    global["host_to_device"] = py::make_tuple(g.host_to_device_count, g.host_to_device_bytes);
    global["reduced_precision_matmul"] = g.reduced_precision_matmul;
    global["int64_downcast"] = g.int64_downcast;
    return py::make_tuple(records, global);
  });

  // The reduced-precision matmul model's fast path (precision.fp16_class_matmul); None when an
  // operand is outside its range.
  m.def("_reduced_matmul", [](const at::Tensor& a, const at::Tensor& b) -> std::optional<at::Tensor> {
    TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "reduced matmul takes fp32 operands");
    return reduced_matmul(a, b);
  });
}

} // namespace spyre
