// The host fallback in C++: every aten op without a spyre kernel runs on the host here, without
// entering Python, when nothing needs Python's judgement (docs/backend.md "How ops run").
//
// Spyre tensors become zero-copy CPU aliases, the CPU kernel runs, outputs are mapped back (an
// input alias -> that spyre tensor, a view of a spyre input's memory -> a spyre view, anything
// else -> a new spyre tensor). Everything else goes to the Python fallback (spyre_device/_fallback.py),
// registered for the PrivateUse2 key, which this fallback redispatches to: mixed devices and CPU
// index tensors (their errors and exceptions live there), factories without a spyre tensor, any op
// while hook objects other than the simulator are registered, and, with the simulator, every op it
// has not armed yet or whose arguments need its per-call decisions (int64 values, adapters, ...).
#pragma once

#include "sim_costing.h"

#include <string>

namespace spyre {

// Who must see each op (set by spyre_device.hooks whenever the hook list changes).
enum class HookMode : int {
  kPython = 0,  // hook objects that need every call: Python runs every op
  kNone = 1,  // no hooks: ops run in C++, uncosted
  kSimulator = 2,  // only the simulator: armed ops run and are costed in C++
};

void set_hook_mode(HookMode mode);

// Set while Python hook code runs on this thread (ops it issues are neither hooked nor costed).
bool set_inside_hooks(bool inside);  // returns the previous value

// The simulator's plan for `name.overload`; replaces an earlier one.
void arm_op(const std::string& name, const std::string& overload, const sim::OpPlan& plan);
void disarm_all_ops();

// While enabled, the fast path notes which ops it ran under the simulator ("name.overload");
// take_reached_ops returns them and starts a new set.
void note_reached_ops(bool enabled);
std::vector<std::string> take_reached_ops();

// Registers the C++ fallback for PrivateUse1 and for `direct_ops` (whose composite kernels must
// not run for spyre tensors). Once per process.
void install_host_fallback(const std::vector<std::string>& direct_ops);

} // namespace spyre
