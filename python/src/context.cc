// streamrt.ExecutionContext: run() binds the caller's arrays (no copy for contiguous arrays of the
// engine's dtypes), allocates the outputs (numpy arrays, or torch tensors when an input is one),
// and runs with the GIL released. On CUDA, torch tensors run on torch's current stream without a
// synchronization (as a torch op would); numpy arrays are copied to the device and back.
#include <cstring>
#include <optional>
#include <utility>

#include "handles.h"
#include "streamrt/sequence.h"
#include "tensors.h"

namespace streamrt::python {

namespace {

// Takes the context's lock without holding the GIL meanwhile, so that a thread running the
// context (which needs the GIL to finish) is never waited for with the GIL held.
std::unique_lock<std::mutex> lock_context(ContextHandle& h) {
  std::unique_lock<std::mutex> lock(h.mu, std::defer_lock);
  py::gil_scoped_release release;
  lock.lock();
  return lock;
}

bool on_cuda(py::handle v) {
  if (auto dev = dlpack_device(v)) return dev->first == dlpack::kCUDA || dev->first == dlpack::kCUDAManaged;
  return py::hasattr(v, "__cuda_array_interface__");
}

py::module_ import_torch(const char* why) {
  try {
    return py::module_::import("torch");
  } catch (py::error_already_set&) {
    throw_status(unsupported(std::string(why) + " needs torch (pip install torch)"));
  }
}

// What run() knows about the call: torch or numpy results, and where CUDA work goes.
struct RunMode {
  bool cuda = false;   // a CUDA engine
  bool torch = false;  // results as torch tensors (an input was a torch tensor or CUDA memory)
  py::object torch_mod, device, stream_arg;
  void* stream = nullptr;
};

RunMode run_mode(const Engine& e, const py::dict& inputs) {
  RunMode m;
  m.cuda = e.device() == DeviceType::kCuda;
  for (auto [k, v] : inputs)
    if (is_torch_tensor(v) || on_cuda(v)) m.torch = true;
  if (!m.torch) return m;
  m.torch_mod = import_torch("CUDA arrays other than torch tensors");
  m.device = m.cuda ? m.torch_mod.attr("device")("cuda", m.torch_mod.attr("cuda").attr("current_device")())
                    : m.torch_mod.attr("device")("cpu");
  if (m.cuda) {
    const auto s = m.torch_mod.attr("cuda").attr("current_stream")(m.device).attr("cuda_stream").cast<intptr_t>();
    m.stream = reinterpret_cast<void*>(s);
    m.stream_arg = py::int_(s == 0 ? 1 : s);  // DLPack: 1 is the legacy default stream
  }
  return m;
}

// An input value as a torch tensor on the engine's CUDA device (copied there when it is not).
py::object to_cuda_tensor(const RunMode& m, py::handle v, DataType dtype) {
  py::object t;
  if (is_torch_tensor(v)) t = py::reinterpret_borrow<py::object>(v);
  else if (py::hasattr(v, "__dlpack__") && on_cuda(v)) t = m.torch_mod.attr("from_dlpack")(v);
  else if (on_cuda(v)) t = m.torch_mod.attr("as_tensor")(v, py::arg("device") = m.device);
  else t = m.torch_mod.attr("as_tensor")(py::module_::import("numpy").attr("asarray")(v, numpy_dtype(dtype)));
  if (!py::object(t.attr("device")).equal(m.device)) t = t.attr("to")(m.device);
  return t;
}

// Sequence / optional inputs (TensorDesc::kind not kTensor): a list of arrays for a sequence,
// an array or None for an optional tensor, a list or None for an optional sequence.
SequenceValue to_sequence_value(py::handle v, const TensorDesc& d, const std::string& what) {
  SequenceValue s;
  s.kind = d.kind;
  s.elem_dtype = d.elem_dtype;
  const bool optional = d.kind != ValueKind::kSequence;
  if (v.is_none()) {
    if (!optional) throw_invalid(what + ": a sequence takes a list of arrays, not None");
    s.has_value = false;
    return s;
  }
  py::module_ np = py::module_::import("numpy");
  auto add = [&](py::handle item) {
    py::array a = np.attr("ascontiguousarray")(item, numpy_dtype(d.elem_dtype));
    HostTensor t;
    t.dtype = d.elem_dtype;
    t.dims.assign(a.shape(), a.shape() + a.ndim());
    const auto* bytes = static_cast<const uint8_t*>(a.data());
    t.data.assign(bytes, bytes + a.nbytes());
    s.tensors.push_back(std::move(t));
  };
  if (d.kind == ValueKind::kOptionalTensor) {
    add(v);
    return s;
  }
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v))
    throw_invalid(what + ": a sequence takes a list of arrays");
  for (py::handle item : v) add(item);
  return s;
}

// A sequence output as Python values: a list of numpy arrays, an array, or None.
py::object from_sequence_value(const SequenceValue& s) {
  if (!s.has_value) return py::none();
  auto array_of = [](const HostTensor& t) {
    py::array a(numpy_dtype(t.dtype), std::vector<py::ssize_t>(t.dims.begin(), t.dims.end()));
    if (!t.data.empty()) std::memcpy(a.mutable_data(), t.data.data(), t.data.size());
    return py::object(a);
  };
  if (s.kind == ValueKind::kOptionalTensor) return array_of(s.tensors.at(0));
  py::list out;
  for (const HostTensor& t : s.tensors) out.append(array_of(t));
  return out;
}

struct BoundOutput {
  const TensorDesc* desc = nullptr;
  bool exact = false;  // dims known before the run; else allocated at the planned max
  py::object value;    // numpy array or torch tensor
  std::optional<DeviceBuffer> device;  // CUDA engine, numpy results
};

BoundOutput bind_output(ExecutionContext& ctx, const RunMode& m, const TensorDesc& d) {
  BoundOutput o;
  o.desc = &d;
  auto dims = ctx.tensor_shape(d.name);  // exact when the shape rules can tell before the run
  o.exact = dims.ok();
  if (!o.exact && d.max.empty()) throw_status(dims.status());
  const Dims& alloc = o.exact ? *dims : d.max;
  const size_t bytes = static_cast<size_t>(unwrap(checked_numel(alloc))) * dtype_size(d.dtype);
  void* ptr = nullptr;
  if (m.torch) {
    o.value = m.torch_mod.attr("empty")(dims_tuple(alloc), py::arg("dtype") = torch_dtype(d.dtype),
                                        py::arg("device") = m.device);
    ptr = reinterpret_cast<void*>(o.value.attr("data_ptr")().cast<intptr_t>());
  } else {
    py::array arr(numpy_dtype(d.dtype), std::vector<py::ssize_t>(alloc.begin(), alloc.end()));
    ptr = arr.mutable_data();
    o.value = arr;
    if (m.cuda) {
      o.device = unwrap(DeviceBuffer::allocate(DeviceType::kCuda, bytes));
      ptr = o.device->data();
    }
  }
  TensorView dummy;  // an empty tensor's address: non-null, never read
  check(ctx.set_tensor_address(d.name, bytes && ptr ? ptr : dummy.address(), bytes));
  return o;
}

// After the run: the outputs' real dims (narrowing those allocated at max), device -> host copies.
py::object finish_output(ExecutionContext& ctx, const RunMode& m, BoundOutput& o) {
  const Dims dims = unwrap(ctx.tensor_shape(o.desc->name));
  const int64_t n = unwrap(checked_numel(dims));
  if (o.device) {
    py::array arr = o.value.cast<py::array>();
    const size_t bytes = static_cast<size_t>(n) * dtype_size(o.desc->dtype);
    if (bytes) check(o.device->copy_to_host(arr.mutable_data(), bytes));
  }
  if (o.exact) return o.value;
  py::object flat = o.value.attr(m.torch ? "view" : "reshape")(-1);
  py::object head = flat[py::slice(0, n, 1)];
  return head.attr(m.torch ? "view" : "reshape")(dims_tuple(dims));
}

std::string names_of(const std::vector<TensorDesc>& descs, bool inputs) {
  std::string s;
  for (const auto& d : descs)
    if (d.is_input == inputs) s += (s.empty() ? "'" : ", '") + d.name + "'";
  return s;
}

py::dict run(ContextHandle& h, py::handle inputs_obj) {
  if (!py::isinstance<py::dict>(inputs_obj)) {
    if (!py::hasattr(inputs_obj, "keys"))
      throw py::type_error("run: expected a dict of input name -> array");
    inputs_obj = py::dict(py::reinterpret_borrow<py::object>(inputs_obj));
  }
  py::dict inputs = py::reinterpret_borrow<py::dict>(inputs_obj);
  auto lock = lock_context(h);
  ExecutionContext& ctx = h.get();
  const Engine& engine = h.engine->get();
  const std::vector<TensorDesc> descs = engine.io_tensors();
  for (const TensorDesc& d : descs)
    if (d.seq_capacity > 0)
      throw_invalid("run: engine '" + engine.name() + "' stores '" + d.name + "' as a KV cache with room for " +
                    std::to_string(d.seq_capacity) + " positions (built with kv_cache_in_place); run() takes dense "
                    "arrays: bind device buffers through the C++ API (examples/greedy_decode), or build without it");
  const RunMode m = run_mode(engine, inputs);

  std::vector<TensorView> views;     // keep the inputs alive (and DLPack capsules owned) until the end
  std::vector<DeviceBuffer> uploads;  // CUDA engine, host inputs
  size_t bound = 0;
  for (auto [k, v] : inputs) {
    if (!py::isinstance<py::str>(k)) throw py::type_error("run: input names must be strings");
    const std::string name = py::str(k);
    const TensorDesc* d = nullptr;
    for (const auto& t : descs)
      if (t.is_input && t.name == name) d = &t;
    if (!d) {
      check(ctx.set_input_shape(name, {}));  // the library's error: no such tensor, or an output
      throw_invalid("'" + name + "' is not an input of engine '" + engine.name() + "'");
    }
    const std::string what = "input '" + name + "'";
    if (d->kind != ValueKind::kTensor) {
      check(ctx.set_sequence_input(name, to_sequence_value(v, *d, what)));
      ++bound;
      continue;
    }
    TensorView t = m.cuda && m.torch ? view_tensor(to_cuda_tensor(m, v, d->dtype), d->dtype, what, m.stream_arg)
                                     : view_tensor(v, d->dtype, what);
    check(ctx.set_input_shape(name, t.dims));
    void* addr = t.address();
    if (m.cuda && !m.torch && t.nbytes) {
      uploads.push_back(unwrap(DeviceBuffer::allocate(DeviceType::kCuda, t.nbytes)));
      check(uploads.back().copy_from_host(t.data, t.nbytes));
      addr = uploads.back().data();
    }
    check(ctx.set_tensor_address(name, addr, t.nbytes));
    views.push_back(std::move(t));
    ++bound;
  }
  size_t num_inputs = 0;
  for (const auto& d : descs) num_inputs += d.is_input;
  if (bound != num_inputs) {
    std::string missing;
    for (const auto& d : descs)
      if (d.is_input && !inputs.contains(d.name)) missing += (missing.empty() ? "'" : ", '") + d.name + "'";
    throw_invalid("run: missing inputs " + missing + " (engine '" + engine.name() + "' takes " +
                  names_of(descs, true) + ")");
  }
  std::vector<BoundOutput> outs;
  for (const auto& d : descs)
    if (!d.is_input && d.kind == ValueKind::kTensor) outs.push_back(bind_output(ctx, m, d));
  Status st;
  {
    py::gil_scoped_release release;
    st = m.cuda && m.torch ? ctx.enqueue(m.stream) : ctx.execute();
  }
  check(st);
  py::dict result;
  for (auto& o : outs) result[py::str(o.desc->name)] = finish_output(ctx, m, o);
  for (const auto& d : descs)
    if (!d.is_input && d.kind != ValueKind::kTensor)
      result[py::str(d.name)] = from_sequence_value(unwrap(ctx.sequence_output(d.name)));
  return result;
}

}  // namespace

ExecutionContext& ContextHandle::get() const {
  if (!ctx) {
    if (engine && !engine->engine) throw_status(invalid_state("engine '" + engine->name + "' is closed"));
    throw_status(invalid_state("execution context is closed"));
  }
  return *ctx;
}

void ContextHandle::close() {
  auto lock = lock_context(*this);
  ctx.reset();
}

void register_context(py::module_& m) {
  py::class_<StreamingStats>(m, "RunStats", "What the last run did with streamed weights (zeros when nothing streams).")
      .def_readonly("bytes_streamed", &StreamingStats::bytes_streamed,
                    "Bytes of weights copied in (host -> device, or file -> memory on the CPU) during the run.")
      .def_readonly("weights_streamed", &StreamingStats::weights_streamed, "Number of weight transfers.")
      .def_readonly("copy_ms", &StreamingStats::copy_ms, "Time the copies took (with streaming_profiling).")
      .def_readonly("stall_ms", &StreamingStats::stall_ms, "Time compute waited for copies (with streaming_profiling).")
      .def_readonly("run_ms", &StreamingStats::run_ms, "The run's wall (CPU) or stream (CUDA) time.")
      .def_property_readonly("overlap", &StreamingStats::overlap,
                             "Fraction of copy time hidden behind compute: 1 - stall / copy (1 when nothing streams).")
      .def("__repr__", [](const StreamingStats& s) {
        return "RunStats(bytes_streamed=" + std::to_string(s.bytes_streamed) +
               ", weights_streamed=" + std::to_string(s.weights_streamed) + ", copy_ms=" + std::to_string(s.copy_ms) +
               ", stall_ms=" + std::to_string(s.stall_ms) + ", run_ms=" + std::to_string(s.run_ms) + ")";
      });

  py::class_<ContextHandle, std::shared_ptr<ContextHandle>>(
      m, "ExecutionContext",
      "One inference stream's state (activations, streaming scratch). Used by one thread at a time (calls from "
      "several threads wait for each other); make one context per thread for parallel runs.")
      .def("run", &run, py::arg("inputs"),
           "Runs the engine on `inputs` (dict name -> numpy array, torch tensor or array-like) and returns a dict "
           "output name -> array: torch tensors when an input is a torch tensor (on CUDA: on torch's current "
           "stream, not synchronized), numpy arrays otherwise. Contiguous inputs of the engine's dtypes are not "
           "copied; the GIL is released while the engine runs. A sequence input or output (TensorInfo.kind) is a "
           "list of numpy arrays, an optional one an array / list or None. Errors: NotFoundError (no such input), "
           "InvalidArgumentError (missing input, wrong dtype, dims outside the profile).")
      .def_property_readonly(
          "last_run_stats",
          [](ContextHandle& h) {
            auto lock = lock_context(h);
            return unwrap(h.get().last_run_stats());
          },
          "RunStats of the last completed run (on CUDA: read it after the stream was synchronized).")
      .def_property(
          "streaming_profiling", [](const ContextHandle& h) { return h.streaming_profiling; },
          [](ContextHandle& h, bool on) {
            auto lock = lock_context(h);
            h.get().set_streaming_profiling(on);
            h.streaming_profiling = on;
          },
          "True records copy_ms / stall_ms of streamed weights in last_run_stats (CUDA events; off by default).")
      .def_property(
          "cuda_graph", [](const ContextHandle& h) { return h.cuda_graph; },
          [](ContextHandle& h, bool on) {
            auto lock = lock_context(h);
            check(h.get().set_cuda_graph(on));
            h.cuda_graph = on;
          },
          "CUDA: True captures runs as a CUDA graph and replays them while dims and addresses stay the same "
          "(UnsupportedError on the CPU).")
      .def_property_readonly("engine", [](const ContextHandle& h) { return h.engine; }, "The Engine of this context.")
      .def_property_readonly("closed", [](const ContextHandle& h) { return !h.ctx; }, "True after close().")
      .def("close", &ContextHandle::close, "Frees the context's memory; run() afterwards raises InvalidStateError.")
      .def("__enter__", [](const std::shared_ptr<ContextHandle>& h) { return h; })
      .def("__exit__", [](ContextHandle& h, py::args) { h.close(); })
      .def("__repr__", [](const ContextHandle& h) {
        return "<streamrt.ExecutionContext of '" + (h.engine ? h.engine->name : std::string()) + "'" +
               (h.ctx ? "" : " (closed)") + ">";
      });
}

}  // namespace streamrt::python
