#include "host_fallback.h"

#include "empty_tensor.h"
#include "generator.h"
#include "host_alias.h"
#include "reduced_matmul.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

namespace spyre {

namespace {

std::atomic<int> g_mode{static_cast<int>(HookMode::kPython)};
thread_local bool t_inside_hooks = false;

// What the fallback needs to know about one operator, from its schema (fixed once built).
struct Description {
  std::vector<char> skip_as_input;  // the kwarg-only `out`: a result, not an input, for the cost
  std::vector<size_t> written;  // arguments the op writes (self of in-place ops, out=)
  std::optional<size_t> generator;  // the kwarg-only `generator`
  std::optional<size_t> dtype;  // the kwarg-only `dtype`
  std::optional<size_t> out, beta, alpha;  // for the reduced-precision matmul kernels
};

// ... plus the simulator's plan for it.
struct OpEntry {
  Description d;
  bool armed = false;
  sim::OpPlan plan;
  // Run by the fast path since the last take_reached_ops (noted only while asked for): a flag
  // per op, not a locked set, as the op_db sweep times the device with the recorder on.
  std::atomic<bool> reached{false};
};

// Whether the fast path notes the ops it runs (spyre_device.sim.verify's recorder of which ops
// reached the device).
std::atomic<bool> g_note_reached{false};

std::mutex g_entries_mutex;
std::unordered_map<const c10::FunctionSchema*, OpEntry> g_entries;

Description describe(const c10::FunctionSchema& schema) {
  Description e;
  const auto& arguments = schema.arguments();
  e.skip_as_input.assign(arguments.size(), 0);
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto& a = arguments[i];
    if (a.alias_info() && a.alias_info()->isWrite()) {
      e.written.push_back(i);
    }
    if (!a.kwarg_only()) {
      continue;
    }
    if (a.name() == "out") {
      e.skip_as_input[i] = 1;
      e.out = i;
    } else if (a.name() == "generator") {
      e.generator = i;
    } else if (a.name() == "dtype") {
      e.dtype = i;
    } else if (a.name() == "beta") {
      e.beta = i;
    } else if (a.name() == "alpha") {
      e.alpha = i;
    }
  }
  return e;
}

struct Lookup {
  OpEntry* entry;  // entries are never removed: stable
  bool armed;
  sim::OpPlan plan;  // a copy: the plan may be re-armed by another thread meanwhile
};

OpEntry& entry_locked(const c10::FunctionSchema& schema) {
  auto [it, added] = g_entries.try_emplace(&schema);
  if (added) {
    it->second.d = describe(schema);
  }
  return it->second;
}

Lookup lookup(const c10::FunctionSchema& schema) {
  std::lock_guard<std::mutex> lock(g_entries_mutex);
  auto& e = entry_locked(schema);
  return {&e, e.armed, e.plan};
}

// Identity maps over the few tensors of one call: a linear scan beats hashing.
using TensorPairs = c10::SmallVector<std::pair<const c10::TensorImpl*, at::Tensor>, 6>;

const at::Tensor* find(const TensorPairs& pairs, const c10::TensorImpl* key) {
  for (const auto& [k, v] : pairs) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

void python_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // spyre_device/_fallback.py is registered for PrivateUse2 (for every op, and for the direct ops).
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::PrivateUse2), stack);
}

template <typename Fn>
void for_each_tensor(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) {
    fn(v.toTensor());
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) {
      if (e.isTensor()) {
        fn(e.toTensor());
      }
    }
  }
}

// The spyre inputs, their host aliases, and the mapping of results back.
class HostCall {
 public:
  HostCall(c10::SmallVectorImpl<at::Tensor>&& spyre, c10::Device device) : spyre_(std::move(spyre)), device_(device) {
    host_aliases_into(spyre_, aliases_);
    for (size_t i = 0; i < spyre_.size(); ++i) {
      alias_of_.emplace_back(spyre_[i].unsafeGetTensorImpl(), aliases_[i]);
      original_of_.emplace_back(aliases_[i].unsafeGetTensorImpl(), spyre_[i]);
    }
  }

  c10::IValue to_host(const c10::IValue& v) const {
    if (v.isTensor()) {
      return host_tensor(v.toTensor());
    }
    if (v.isList()) {
      const auto list = v.toList();
      bool any = false;
      for (const auto& e : v.toListRef()) {
        any |= e.isTensor() && e.toTensor().is_privateuseone();
      }
      if (!any) {
        return v;
      }
      c10::impl::GenericList out(list.elementType());
      out.reserve(list.size());
      for (const auto& e : v.toListRef()) {
        out.push_back(e.isTensor() ? c10::IValue(host_tensor(e.toTensor())) : e);
      }
      return out;
    }
    if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) {
      return c10::Device(c10::DeviceType::CPU);
    }
    if (v.isGenerator() && v.toGenerator().device().type() == c10::DeviceType::PrivateUse1) {
      return host_generator_of(v.toGenerator());
    }
    return v;
  }

  // An out= kernel that resized a host alias: mirror it onto the spyre tensor.
  void sync_written(const at::Tensor& original) const {
    const auto* found = find(alias_of_, original.unsafeGetTensorImpl());
    if (found == nullptr) {
      return;
    }
    const auto& alias = *found;
    const bool same_geometry = alias.sizes() == original.sizes() && alias.strides() == original.strides();
    if (same_geometry && alias.data_ptr() == original.data_ptr()) {
      return;
    }
    if (alias.storage().data() != original.storage().data()) {
      original.set_(adopt_host_tensor(alias, device_.index()));
    } else if (!same_geometry || alias.storage_offset() != original.storage_offset()) {
      original.set_(original.storage(), alias.storage_offset(), alias.sizes(), alias.strides());
    }
  }

  c10::IValue to_device(const c10::IValue& v) {
    if (v.isTensor()) {
      return device_tensor(v.toTensor());
    }
    if (v.isList()) {
      const auto list = v.toList();
      c10::impl::GenericList out(list.elementType());
      out.reserve(list.size());
      for (const auto& e : v.toListRef()) {
        out.push_back(e.isTensor() ? c10::IValue(device_tensor(e.toTensor())) : e);
      }
      return out;
    }
    return v;
  }

 private:
  at::Tensor host_tensor(const at::Tensor& t) const {
    if (!t.defined()) {
      return t;
    }
    const auto* found = find(alias_of_, t.unsafeGetTensorImpl());
    return found == nullptr ? t : *found;
  }

  at::Tensor device_tensor(const at::Tensor& t) {
    if (!t.defined() || !t.is_cpu()) {
      return t;
    }
    if (const auto* original = find(original_of_, t.unsafeGetTensorImpl())) {
      return *original;
    }
    if (t._is_zerotensor()) {  // _efficientzerotensor: no storage to adopt
      return at::zeros(t.sizes(), t.options().device(device_));
    }
    const void* ptr = t.storage().data();
    if (ptr != nullptr) {
      for (size_t i = 0; i < aliases_.size(); ++i) {  // the first spyre tensor over this memory
        if (aliases_[i].storage().data() == ptr) {
          return device_view(spyre_[i], t);
        }
      }
    }
    return adopt_host_tensor(t, device_.index());
  }

  // Inline lists: an op has a handful of spyre tensors, and these are built for every fallback op.
  c10::SmallVector<at::Tensor, 6> spyre_;
  c10::SmallVector<at::Tensor, 6> aliases_;
  c10::Device device_;
  TensorPairs alias_of_;
  TensorPairs original_of_;
};

// precision.REDUCED_PRECISION_KERNELS on the host arguments; nullopt when the exact model must run.
std::optional<c10::IValue> run_reduced(const Description& e, sim::Reduced kind, c10::ArrayRef<c10::IValue> host) {
  std::optional<at::Tensor> out;
  if (e.out && !host[*e.out].isNone()) {
    out = host[*e.out].toTensor();
  }
  std::optional<at::Tensor> result;
  if (kind == sim::Reduced::kMatmul) {
    result = reduced_matmul(host[0].toTensor(), host[1].toTensor(), out);
  } else {
    const auto scalar = [&](const std::optional<size_t>& i) {
      return i && !host[*i].isNone() ? host[*i].toScalar() : at::Scalar(1);
    };
    result = reduced_addmm(
        host[0].toTensor(), host[1].toTensor(), host[2].toTensor(), scalar(e.beta), scalar(e.alpha), out);
  }
  if (!result) {
    return std::nullopt;
  }
  if (!out || result->unsafeGetTensorImpl() == out->unsafeGetTensorImpl()) {  // computed in out= already
    return c10::IValue(*result);
  }
  // adapters.with_out: compute, then fill out= (an out= the kernel could not write in place)
  if (out->sizes() != result->sizes()) {
    out->resize_(result->sizes());
  }
  out->copy_(*result);
  return c10::IValue(*out);
}

void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto mode = static_cast<HookMode>(g_mode.load(std::memory_order_relaxed));
  if (mode == HookMode::kPython) {
    return python_fallback(op, stack);
  }
  const bool costed = mode == HookMode::kSimulator && !t_inside_hooks;
  const auto& schema = op.schema();
  const Lookup entry = lookup(schema);
  const Description& d = entry.entry->d;
  if (costed && !entry.armed) {  // the simulator has not planned this op yet
    return python_fallback(op, stack);
  }
  if (costed && g_note_reached.load(std::memory_order_relaxed)) {
    entry.entry->reached.store(true, std::memory_order_relaxed);
  }
  const size_t n = schema.arguments().size();
  const auto args = torch::jit::last(*stack, n);

  // Which card; anything the Python fallback must judge (mixed devices, CPU index tensors).
  std::optional<c10::Device> device;
  c10::SmallVector<at::Tensor, 6> spyre;
  bool python = false, int64_value = false;
  for (const auto& v : args) {
    for_each_tensor(v, [&](const at::Tensor& t) {
      if (!t.defined()) {
        return;
      }
      if (t.scalar_type() == at::kLong && !t.unsafeGetTensorImpl()->is_wrapped_number()) {
        int64_value = true;
      }
      if (t.is_privateuseone()) {
        python |= device && *device != t.device();
        device = t.device();
        spyre.push_back(t);
      } else if (!t.is_cpu() || t.dim() > 0) {
        python = true;
      }
    });
  }
  if (python || !device) {
    return python_fallback(op, stack);
  }
  bool reduced = false, wrap_int64 = false;
  if (costed) {
    // engine.Simulator.before_op's per-call decisions.
    const auto policies = sim::policies();
    if (policies.int64_downcast &&
        (int64_value ||
         (d.dtype && args[*d.dtype].isInt() && args[*d.dtype].toInt() == static_cast<int64_t>(at::kLong)))) {
      if (!policies.int64_warned) {  // the warning is Python's
        return python_fallback(op, stack);
      }
      wrap_int64 = true;
    }
    if (entry.plan.reduced != sim::Reduced::kNone && policies.reduced_precision) {
      bool any_float = false, all_float = true;
      for (size_t i = 0; i < n; ++i) {
        if (args[i].isTensor()) {
          const bool is_float = args[i].toTensor().scalar_type() == at::kFloat;
          any_float |= is_float && !schema.arguments()[i].kwarg_only();
          all_float &= is_float;
        }
      }
      if (any_float && !all_float) {
        return python_fallback(op, stack);
      }
      reduced = any_float;
    }
  }

  // The op's arguments, moved off the stack into an inline list; the host arguments then go on the
  // same stack, where the CPU kernel leaves its results: no heap-allocated vector per op for either.
  c10::SmallVector<c10::IValue, 8> arguments;
  const auto first = stack->end() - static_cast<std::ptrdiff_t>(n);
  arguments.append(std::make_move_iterator(first), std::make_move_iterator(stack->end()));
  stack->erase(first, stack->end());
  // Dedupe: one alias per spyre tensor, as the Python fallback's identity map gives.
  c10::SmallVector<at::Tensor, 6> distinct;
  for (const auto& t : spyre) {
    bool seen = false;
    for (const auto& d : distinct) {
      seen |= d.unsafeGetTensorImpl() == t.unsafeGetTensorImpl();
    }
    if (!seen) {
      distinct.push_back(t);
    }
  }
  HostCall call(std::move(distinct), *device);
  const auto base = static_cast<std::ptrdiff_t>(stack->size());  // host arguments, then results, from here
  for (const auto& v : arguments) {
    stack->push_back(call.to_host(v));
  }
  if (d.generator && (*stack)[base + *d.generator].isNone()) {
    (*stack)[base + *d.generator] = host_generator_of(default_generator(device->index()));
  }

  const auto started = std::chrono::steady_clock::now();
  if (reduced) {
    auto result = run_reduced(d, entry.plan.reduced, c10::ArrayRef<c10::IValue>(stack->data() + base, n));
    stack->erase(stack->begin() + base, stack->end());
    if (!result) {  // outside the fast path's range: the exact model, in Python
      for (auto& v : arguments) {
        stack->push_back(std::move(v));
      }
      return python_fallback(op, stack);
    }
    stack->push_back(std::move(*result));
  } else {
    op.callBoxed(stack);
  }
  const std::span<c10::IValue> results(stack->data() + base, stack->size() - base);
  if (wrap_int64) {  // engine.Simulator._int64_runner: inside the timed host work, as there
    for (const auto& v : results) {
      for_each_tensor(v, [](const at::Tensor& t) { sim::wrap_int64(t); });
    }
  }
  const double host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  for (size_t i : d.written) {
    for_each_tensor(arguments[i], [&](const at::Tensor& t) {
      if (t.defined()) {
        call.sync_written(t);
      }
    });
  }
  // The costing's tensor lists: per-thread buffers reused from op to op (emptied after use, so
  // they hold no tensor between ops), not two fresh vectors per call.
  thread_local std::vector<at::Tensor> outputs, inputs;
  outputs.clear();
  inputs.clear();
  for (auto& v : results) {  // mapped back in place: the stack holds the op's results
    v = call.to_device(v);
    if (costed) {
      for_each_tensor(v, [&](const at::Tensor& t) {
        if (t.defined() && !t.is_cpu()) {
          outputs.push_back(t);
        }
      });
    }
  }
  if (costed) {
    for (size_t i = 0; i < n; ++i) {
      if (!d.skip_as_input[i]) {
        for_each_tensor(arguments[i], [&](const at::Tensor& t) {
          if (t.defined() && !t.is_cpu()) {
            inputs.push_back(t);
          }
        });
      }
    }
    sim::account(entry.plan, inputs, outputs, host_seconds, reduced);
    inputs.clear();
  }
  outputs.clear();
}

} // namespace

void set_hook_mode(HookMode mode) {
  g_mode.store(static_cast<int>(mode));
}

bool set_inside_hooks(bool inside) {
  const bool previous = t_inside_hooks;
  t_inside_hooks = inside;
  return previous;
}

void arm_op(const std::string& name, const std::string& overload, const sim::OpPlan& plan) {
  const auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  TORCH_CHECK(handle.has_value(), "spyre: no operator ", name, ".", overload);
  const auto& schema = handle->schema();
  std::lock_guard<std::mutex> lock(g_entries_mutex);
  auto& entry = entry_locked(schema);
  entry.armed = true;
  entry.plan = plan;
}

void note_reached_ops(bool enabled) {
  g_note_reached.store(enabled);
}

std::vector<std::string> take_reached_ops() {
  std::lock_guard<std::mutex> lock(g_entries_mutex);
  std::vector<std::string> names;
  for (auto& [schema, entry] : g_entries) {
    if (!entry.reached.exchange(false, std::memory_order_relaxed)) {
      continue;
    }
    const auto& name = schema->name();
    const auto colons = name.find("::");
    const auto& overload = schema->overload_name();
    names.push_back(
        (colons == std::string::npos ? name : name.substr(colons + 2)) + "." + (overload.empty() ? "default" : overload));
  }
  return names;
}

void disarm_all_ops() {
  std::lock_guard<std::mutex> lock(g_entries_mutex);
  for (auto& [schema, entry] : g_entries) {
    entry.armed = false;
  }
}

void install_host_fallback(const std::vector<std::string>& direct_ops) {
  static std::unique_ptr<torch::Library> fallback_library, direct_library;
  if (fallback_library) {
    return;
  }
  fallback_library = std::make_unique<torch::Library>(
      torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  fallback_library->fallback(torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
  direct_library = std::make_unique<torch::Library>(
      torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  for (const auto& name : direct_ops) {
    direct_library->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
  }
}

} // namespace spyre
