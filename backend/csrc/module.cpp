// Python bindings of spyre_device._C: the private API the Python package wraps.
#include "allocator.h"
#include "device_state.h"
#include "dtype_policy.h"
#include "generator.h"
#include "host_alias.h"
#include "sticks.h"
#include "streams.h"
#include "transfer_stats.h"

#include <ATen/ScalarOps.h>
#include <torch/extension.h>

namespace py = pybind11;

namespace spyre {
void bind_host_fallback(py::module& m);  // host_fallback_bindings.cpp
}

namespace {

c10::Stream stream_from(int64_t device, int64_t stream_id) {
  return c10::Stream(
      c10::Stream::UNSAFE,
      c10::Device(c10::DeviceType::PrivateUse1, spyre::resolve_device(device)),
      stream_id);
}

// Named integer counters as the Python dict the private API returns.
py::dict counters(std::initializer_list<std::pair<const char*, int64_t>> named) {
  py::dict d;
  for (const auto& [name, value] : named) {
    d[name] = value;
  }
  return d;
}

py::dict memory_stats(int64_t device) {
  const auto s = spyre::allocator().stats(static_cast<c10::DeviceIndex>(device));
  return counters({
      {"allocated_bytes.all.current", s.allocated_bytes}, {"allocated_bytes.all.peak", s.allocated_bytes_peak},
      {"allocated_bytes.all.allocated", s.allocated_bytes_total}, {"allocated_bytes.all.freed", s.freed_bytes_total},
      {"requested_bytes.all.current", s.requested_bytes}, {"requested_bytes.all.peak", s.requested_bytes_peak},
      {"padding_bytes.all.current", s.padding_bytes}, {"pending_free_bytes.all.current", s.pending_free_bytes},
      {"reserved_bytes.all.current", s.reserved_bytes}, {"reserved_bytes.all.peak", s.reserved_bytes_peak},
      {"cached_bytes.all.current", s.cached_bytes}, {"cached_blocks.all.current", s.cached_blocks},
      {"num_cache_hits", s.cache_hits}, {"num_host_allocs", s.host_allocs}, {"num_host_frees", s.host_frees},
      {"num_alloc_retries", 0}, {"num_allocs", s.num_allocs}, {"num_frees", s.num_frees}, {"num_ooms", s.num_ooms},
      {"capacity_bytes", s.capacity}});
}

py::dict layout_of(const at::Tensor& t) {
  TORCH_CHECK(t.is_privateuseone(), "layout() expects a spyre tensor, got one on ", t.device());
  const auto layout = spyre::stick_layout(t.sizes(), t.strides(), t.element_size());
  return counters({
      {"stick_bytes", static_cast<int64_t>(spyre::kStickBytes)}, {"rows", layout.rows},
      {"row_bytes", layout.row_bytes}, {"sticks_per_row", layout.sticks_per_row}, {"sticks", layout.sticks},
      {"logical_bytes", layout.logical_bytes}, {"padded_bytes", layout.padded_bytes},
      {"padding_bytes", layout.padded_bytes - layout.logical_bytes}});
}

py::dict transfer_stats() {
  const auto c = spyre::transfer_counts();
  py::dict d;
  const char* names[] = {"host_to_device", "device_to_host", "device_to_device"};
  for (int k = 0; k < 3; ++k) {
    d[py::str(std::string(names[k]) + "_bytes")] = c.bytes[k];
    d[py::str(std::string(names[k]) + "_count")] = c.count[k];
  }
  return d;
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "spyre device runtime (simulated on host memory)";

  m.def("_device_count", [] { return static_cast<int64_t>(spyre::device_count()); });
  m.def("_current_device", [] { return static_cast<int64_t>(spyre::current_device()); });
  m.def("_set_device", [](int64_t d) { spyre::set_device(static_cast<c10::DeviceIndex>(d)); });
  m.def("_check_device_index", [](int64_t d) {
    spyre::check_device_index(static_cast<c10::DeviceIndex>(d));
  });

  m.def("_memory_stats", &memory_stats, py::arg("device") = -1);
  m.def("_empty_cache", [] { spyre::allocator().empty_cache(); });
  m.def("_reset_peak_memory_stats", [](int64_t d) {
    spyre::allocator().reset_peak(static_cast<c10::DeviceIndex>(d));
  });
  m.def("_set_memory_capacity", [](int64_t d, int64_t bytes) {
    spyre::allocator().set_capacity(static_cast<c10::DeviceIndex>(d), bytes);
  });
  m.def("_default_memory_capacity", &spyre::default_capacity);
  m.def("_parse_memory_capacity", &spyre::parse_capacity);
  m.def("_layout", &layout_of);

  m.def("_set_unsupported_dtypes", &spyre::set_unsupported_dtypes);
  m.def("_unsupported_dtypes", &spyre::unsupported_dtypes);

  m.def("_transfer_stats", &transfer_stats);
  m.def("_reset_transfer_stats", &spyre::reset_transfer_counts);

  // Streams are passed as (device index, stream id) pairs.
  m.def("_current_stream_id", [](int64_t d) {
    return spyre::current_stream(static_cast<c10::DeviceIndex>(d)).id();
  });
  m.def("_stream_clock", [](int64_t d, int64_t id) { return spyre::stream_clock(stream_from(d, id)); });
  m.def("_advance_stream_clock", [](int64_t d, int64_t id, double seconds) {
    spyre::advance_stream_clock(stream_from(d, id), seconds);
  });
  // Events are identified by torch.Event.event_id (the backend's event pointer).
  m.def("_event_sim_time", [](uintptr_t event_id) {
    TORCH_CHECK(event_id != 0, "the spyre event has not been recorded");
    return reinterpret_cast<spyre::SimEvent*>(event_id)->time;
  });
  m.def("_synchronize", [](int64_t d) {
    spyre::allocator().synchronize(spyre::resolve_device(static_cast<c10::DeviceIndex>(d)), -1);
  });

  m.def("_default_generator", [](int64_t d) {
    return spyre::default_generator(static_cast<c10::DeviceIndex>(d));
  });
  m.def("_host_generator", &spyre::host_generator_of);

  // The Python boxed fallback receives wrapped-number tensors (e.g. the 2 in
  // `t % 2`) as Python scalars; this restores them for the host kernel.
  m.def("_wrapped_bool", [](bool v) { return at::native::wrapped_scalar_tensor(at::Scalar(v)); });
  m.def("_wrapped_int", [](int64_t v) { return at::native::wrapped_scalar_tensor(at::Scalar(v)); });
  m.def("_wrapped_float", [](double v) { return at::native::wrapped_scalar_tensor(at::Scalar(v)); });
  m.def("_wrapped_complex", [](c10::complex<double> v) {
    return at::native::wrapped_scalar_tensor(at::Scalar(v));
  });
  m.def("_host_aliases", &spyre::host_aliases);
  m.def("_device_view", &spyre::device_view);
  m.def("_adopt_host_tensor", [](const at::Tensor& host, int64_t d) {
    return spyre::adopt_host_tensor(host, static_cast<c10::DeviceIndex>(d));
  });

  spyre::bind_host_fallback(m);
}
