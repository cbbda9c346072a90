// streamrt.Engine, TensorInfo, WeightInfo and the functions that make engines (_build_onnx, load).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/byte_size.h"
#include "handles.h"
#include "plan/plan.h"
#include "runtime/engine_state.h"
#include "streamrt/builder.h"
#include "streamrt/refit.h"
#include "tensors.h"

namespace streamrt::python {

Engine& EngineHandle::get() const {
  if (!engine) throw_status(invalid_state("engine '" + name + "' is closed"));
  return *engine;
}

void EngineHandle::close() {
  for (auto& weak : contexts)
    if (auto c = weak.lock()) c->close();
  contexts.clear();
  engine.reset();
}

namespace {

// The engine, shared (for a Refitter); InvalidStateError when closed.
std::shared_ptr<Engine> live(const EngineHandle& h) {
  h.get();
  return h.engine;
}

std::shared_ptr<EngineHandle> wrap(std::shared_ptr<Engine> e) {
  auto h = std::make_shared<EngineHandle>();
  h->name = e->name();
  h->engine = std::move(e);
  return h;
}

std::shared_ptr<EngineHandle> load_bytes(std::vector<uint8_t> bytes, const RuntimeOptions& options) {
  auto rt = unwrap(Runtime::create(options));
  return wrap(unwrap(rt->load_engine_bytes(std::move(bytes))));
}

// load()'s keyword arguments as RuntimeOptions: `streamrt run`'s diagnostics flags (the CPU ignores them).
RuntimeOptions load_options(DeviceType device, bool profile, const std::string& attention_kernel,
                            const std::string& group_gemm_kernel, bool few_row_kernel, bool programmatic_launch,
                            const std::string& step_times, const std::string& stream_trace) {
  RuntimeOptions o;
  o.device = device;
  o.profile = profile;
  o.attention_kernel = unwrap(parse_attention_kernel(attention_kernel));
  o.group_gemm_kernel = unwrap(parse_group_gemm_kernel(group_gemm_kernel));
  o.few_row_kernel = few_row_kernel;
  o.programmatic_launch = programmatic_launch;
  o.step_times_path = step_times;
  o.stream_trace_path = stream_trace;
  return o;
}

std::shared_ptr<EngineHandle> build_onnx(const std::string& path, const std::optional<std::string>& device,
                                         const std::string& precision, bool weight_streaming, const py::dict& shapes,
                                         const py::dict& profiles, bool tactics, bool allow_tf32, bool strip_weights,
                                         const std::string& name, const std::optional<std::string>& cache_dir,
                                         py::object cache_max_size, const py::kwargs& sizes) {
  BuilderConfig c = make_config(resolve_device(device), precision, weight_streaming, shapes, profiles, sizes);
  c.tactics = tactics;
  c.allow_tf32 = allow_tf32;
  c.strip_weights = strip_weights;
  c.engine_name = name;
  const uint64_t max_bytes =
      cache_max_size.is_none() ? kDefaultCacheMaxBytes : parse_size(cache_max_size, "cache_max_size");
  BuildReport report;
  std::optional<CachedBuildInfo> info;
  Result<std::vector<uint8_t>> plan = Status(StatusCode::kInternal, "not built");
  {
    py::gil_scoped_release release;
    if (cache_dir) {
      // The package is an entry point like the CLI: it, not the library, reads the environment.
      std::string dir = cache_dir->empty()
                            ? unwrap(default_cache_dir(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")))
                            : *cache_dir;
      auto cache = unwrap(DiskEngineCache::open(dir, max_bytes));
      info.emplace();
      plan = build_plan_cached(path, c, *cache, &*info, &report);
    } else {
      plan = build_plan_from_onnx(path, c, &report);
    }
  }
  RuntimeOptions options;
  options.device = c.device;
  auto h = load_bytes(unwrap(std::move(plan)), options);
  h->report = report;
  h->cache = info;
  return h;
}

void set_budget(EngineHandle& h, py::handle value) {
  Engine& e = h.get();
  BudgetSpec spec;
  if (py::isinstance<py::bool_>(value) || !(py::isinstance<py::int_>(value) || py::isinstance<py::str>(value)))
    throw py::type_error("weight_streaming_budget: expected an int (bytes) or a string such as \"8GiB\", \"50%\" "
                         "or \"auto\", got " + std::string(py::str(py::type::of(value).attr("__name__"))));
  if (py::isinstance<py::int_>(value)) {
    spec.kind = BudgetSpec::Kind::kBytes;
    spec.bytes = parse_size(value, "weight_streaming_budget");
  } else {
    std::string text = value.cast<std::string>();
    auto parsed = parse_budget(text);  // the one parser of budget strings (the CLI's --budget too)
    if (!parsed.ok()) throw_invalid("weight_streaming_budget: " + parsed.status().message());
    if (parsed->kind == BudgetSpec::Kind::kUnset) throw_invalid("weight_streaming_budget: empty string");
    spec = *parsed;
  }
  const uint64_t streamable = e.streamable_weights_size();
  const uint64_t automatic = spec.kind == BudgetSpec::Kind::kAuto ? e.weight_streaming_automatic_budget() : 0;
  check(e.set_weight_streaming_budget(resolve_budget(spec, streamable, automatic)));
}

void save(const EngineHandle& h, py::handle path) {
  Engine& e = h.get();
  std::string p = fspath(path);
  // Written from the engine's plan data, so that weights refitted since the load are saved.
  plan::PlanData copy = e.state().plan.data;  // write_plan recomputes offsets: keep the engine's
  py::gil_scoped_release release;
  check(plan::write_plan(copy, p));
}

void refit(EngineHandle& h, py::handle weights) {
  auto r = unwrap(Refitter::create(live(h)));
  if (py::isinstance<py::str>(weights) || py::hasattr(weights, "__fspath__")) {
    std::string path = fspath(weights);
    py::gil_scoped_release release;
    check(r->set_weights_from_onnx(path));
  } else {
    if (!py::isinstance<py::dict>(weights))
      throw py::type_error("refit: expected a dict of weight name -> array, or the path of an ONNX model");
    std::vector<WeightDesc> descs = r->weights();
    for (auto [k, v] : weights.cast<py::dict>()) {
      std::string name = py::str(k);
      auto it = std::find_if(descs.begin(), descs.end(), [&](const WeightDesc& d) { return d.name == name; });
      if (it == descs.end()) throw_status(not_found("engine '" + h.name + "' has no weight named '" + name + "'"));
      TensorView t = view_tensor(v, it->dtype, "weight '" + name + "'");
      check(r->set_weights(name, t.dtype, t.dims, t.data, t.nbytes));
    }
  }
  py::gil_scoped_release release;
  check(r->refit());
}

py::dict build_report(const EngineHandle& h) {
  py::dict d;
  if (!h.report) return d;
  const BuildReport& r = *h.report;
  d["nodes_imported"] = r.nodes_imported;
  d["nodes_folded"] = r.nodes_folded;
  d["nodes_removed"] = r.nodes_removed;
  d["nodes_fused"] = r.nodes_fused;
  d["steps"] = r.steps;
  d["arena_bytes"] = r.arena_bytes;
  d["weight_bytes"] = r.weight_bytes;
  d["streamable_bytes"] = r.streamable_bytes;
  d["streamable_weights"] = r.streamable_weights;
  d["steps_split"] = r.steps_split;
  d["steps_quantized"] = r.steps_quantized;
  d["steps_prequantized"] = r.steps_prequantized;
  d["steps_calibrated"] = r.steps_calibrated;
  d["calibration_ms"] = r.calibration_ms;
  d["steps_tuned"] = r.steps_tuned;
  d["steps_tuned_reused"] = r.steps_tuned_reused;
  d["tactic_ms"] = r.tactic_ms;
  if (h.cache) {
    d["cache_hit"] = h.cache->hit;
    d["cache_key"] = h.cache->key.hex();
    d["cache_miss_reason"] = h.cache->miss_reason;
    d["cache_saved"] = h.cache->saved;
  }
  return d;
}

std::string desc_repr(const TensorDesc& d) {
  return "TensorInfo(name=" + std::string(py::repr(py::str(d.name))) + ", dtype='" + dtype_name(d.dtype) +
         "', shape=" + std::string(py::repr(dims_tuple(d.dims))) + ")";
}

std::vector<TensorDesc> io_of(const EngineHandle& h, bool inputs) {
  std::vector<TensorDesc> out;
  for (auto& d : h.get().io_tensors())
    if (d.is_input == inputs) out.push_back(d);
  return out;
}

}  // namespace

std::string fspath(py::handle p) { return py::str(py::module_::import("os").attr("fspath")(p)); }

// A size argument: a non-negative int, or a size string of the budget grammar ("64MiB").
uint64_t parse_size(py::handle v, const std::string& what) {
  if (py::isinstance<py::bool_>(v)) throw py::type_error(what + ": expected an int or a size string, got a bool");
  if (py::isinstance<py::int_>(v)) {
    if (v.cast<py::int_>() < py::int_(0)) throw_invalid(what + ": a size cannot be negative");
    try {
      return v.cast<uint64_t>();
    } catch (py::cast_error&) {
      throw_invalid(what + ": " + std::string(py::str(v)) + " is too large");
    }
  }
  if (!py::isinstance<py::str>(v))
    throw py::type_error(what + ": expected an int or a size string such as \"64MiB\"");
  std::string text = v.cast<std::string>();
  auto spec = parse_budget(text);
  if (!spec.ok()) throw_invalid(what + ": " + spec.status().message());
  if (spec->kind != BudgetSpec::Kind::kBytes) throw_invalid(what + " '" + text + "': expected a size such as 64MiB");
  return spec->bytes;
}

DeviceType resolve_device(const std::optional<std::string>& device) {
  if (!device || *device == "auto") return unwrap(Runtime::create({}))->device();
  auto d = parse_device_type(*device);
  if (!d.ok()) throw_invalid("device '" + *device + "': expected \"cpu\", \"cuda\" or \"auto\"");
  return *d;
}

// build(calibration=[{input: array}, ...]): host copies (the build may outlive the arrays' views).
std::vector<std::map<std::string, Tensor>> calibration_samples(py::handle obj) {
  if (py::isinstance<py::dict>(obj) || py::isinstance<py::str>(obj) || !py::isinstance<py::iterable>(obj))
    throw py::type_error("calibration: expected a list of {input name: array} dicts, one per run");
  std::vector<std::map<std::string, Tensor>> out;
  for (py::handle sample : obj) {
    const std::string where = "calibration[" + std::to_string(out.size()) + "]";
    if (!py::isinstance<py::dict>(sample)) throw py::type_error(where + ": expected a dict {input name: array}");
    auto& m = out.emplace_back();
    for (auto [k, v] : sample.cast<py::dict>()) {
      const std::string name = py::str(k);
      TensorView view = view_tensor(v, DataType::kUndefined, where + "['" + name + "']");
      if (view.cuda) throw_invalid(where + "['" + name + "']: calibration inputs are host arrays");
      Tensor t = unwrap(Tensor::allocate(view.dtype, view.dims));
      if (view.nbytes) std::memcpy(t.mutable_data(), view.data, view.nbytes);
      m[name] = std::move(t);
    }
  }
  return out;
}

BuilderConfig make_config(DeviceType device, const std::string& precision, bool weight_streaming,
                          const py::dict& shapes, const py::dict& profiles, const py::kwargs& sizes) {
  BuilderConfig c;
  c.device = device;
  auto prec = parse_dtype(precision);
  if (!prec.ok() || !is_float(*prec))
    throw_invalid("precision '" + precision + "': expected \"float32\", \"float16\" or \"bfloat16\"");
  c.float_precision = *prec;
  c.weight_streaming = weight_streaming;
  for (auto [k, v] : shapes) c.shapes[py::str(k)] = to_dims(v, "shapes['" + std::string(py::str(k)) + "']");
  for (auto [k, v] : profiles) {
    std::string name = py::str(k);
    py::tuple t = v.cast<py::tuple>();
    c.profiles[name] = {to_dims(t[0], "profiles['" + name + "'] min"), to_dims(t[1], "profiles['" + name + "'] opt"),
                        to_dims(t[2], "profiles['" + name + "'] max")};
  }
  if (sizes.contains("min_streamable_bytes") && !sizes["min_streamable_bytes"].is_none())
    c.min_streamable_bytes = parse_size(sizes["min_streamable_bytes"], "min_streamable_bytes");
  if (sizes.contains("stream_chunk_bytes") && !sizes["stream_chunk_bytes"].is_none())
    c.stream_chunk_bytes = parse_size(sizes["stream_chunk_bytes"], "stream_chunk_bytes");
  if (sizes.contains("kv_cache_in_place")) c.kv_cache_in_place = sizes["kv_cache_in_place"].cast<bool>();
  if (sizes.contains("weight_quant") && !sizes["weight_quant"].is_none()) {
    auto q = parse_weight_quant(py::str(sizes["weight_quant"]));
    if (!q.ok()) throw_invalid("weight_quant: " + q.status().message());
    c.weight_quant = *q;
  }
  if (sizes.contains("calibration") && !sizes["calibration"].is_none()) {
    if (c.weight_quant.scheme == WeightQuantScheme::kNone)
      throw_invalid("calibration: needs weight_quant \"int8\", \"fp8\" or \"int4[:GROUP]\"");
    c.weight_quant.calibration = calibration_samples(sizes["calibration"]);
  }
  return c;
}

void register_engine(py::module_& m) {
  py::class_<TensorDesc>(m, "TensorInfo", "An input or output of an engine: name, dtype and dims (-1: dynamic).")
      .def_property_readonly("name", [](const TensorDesc& d) { return d.name; }, "The tensor's name in the model.")
      .def_property_readonly("dtype", [](const TensorDesc& d) { return dtype_name(d.dtype); },
                             "Element type: \"float32\", \"int64\", \"float16\", \"bfloat16\", ...")
      .def_property_readonly("shape", [](const TensorDesc& d) { return dims_tuple(d.dims); },
                             "Dims as a tuple; -1 marks a dynamic dimension.")
      .def_property_readonly("is_input", [](const TensorDesc& d) { return d.is_input; }, "True for inputs.")
      .def_property_readonly("kind", [](const TensorDesc& d) { return value_kind_name(d.kind); },
                             "\"tensor\", or \"sequence\", \"optional tensor\", \"optional sequence\": run() takes "
                             "and returns those as a list of arrays, an array or None.")
      .def_property_readonly("element_dtype", [](const TensorDesc& d) { return dtype_name(d.elem_dtype); },
                             "A sequence's or optional's element type (\"undefined\" for a tensor).")
      .def_property_readonly("min_shape", [](const TensorDesc& d) { return dims_tuple(d.min); },
                             "Inputs: the profile's smallest dims.")
      .def_property_readonly("opt_shape", [](const TensorDesc& d) { return dims_tuple(d.opt); },
                             "Inputs: the profile's optimization dims.")
      .def_property_readonly("max_shape", [](const TensorDesc& d) { return dims_tuple(d.max); },
                             "Inputs: the profile's largest dims; outputs: the planned largest dims.")
      .def_property_readonly("seq_capacity", [](const TensorDesc& d) { return d.seq_capacity; },
                             "A KV cache stored in place (build(kv_cache_in_place=True)): its room along seq_axis, "
                             "which its buffers hold whatever the dims; 0 for a dense tensor.")
      .def_property_readonly("seq_axis", [](const TensorDesc& d) { return d.seq_axis; },
                             "The axis seq_capacity applies to (0 for a dense tensor).")
      .def("__repr__", &desc_repr);

  py::class_<WeightDesc>(m, "WeightInfo", "A weight of an engine, as refit() sees it.")
      .def_readonly("name", &WeightDesc::name, "The weight's name (the model's initializer name).")
      .def_property_readonly("dtype", [](const WeightDesc& w) { return dtype_name(w.dtype); }, "Element type.")
      .def_property_readonly("shape", [](const WeightDesc& w) { return dims_tuple(w.dims); }, "Dims.")
      .def_readonly("present", &WeightDesc::present, "False for a stripped plan's weight not refitted yet.")
      .def_readonly("shape_input", &WeightDesc::shape_input,
                    "Read as a shape by some step: its value cannot change (refit may only supply it).")
      .def("__repr__", [](const WeightDesc& w) {
        return "WeightInfo(name=" + std::string(py::repr(py::str(w.name))) + ", dtype='" + dtype_name(w.dtype) +
               "', shape=" + std::string(py::repr(dims_tuple(w.dims))) + ")";
      });

  py::class_<EngineHandle, std::shared_ptr<EngineHandle>>(
      m, "Engine",
      "A built engine (a loaded plan) on one device. Immutable once loaded except for its weight-streaming "
      "budget and refit; shared by any number of execution contexts, which may run on several threads.")
      .def_property_readonly("name", [](const EngineHandle& h) { return h.get().name(); }, "The engine's name.")
      .def_property_readonly("device", [](const EngineHandle& h) { return device_type_name(h.get().device()); },
                             "\"cpu\" or \"cuda\".")
      .def_property_readonly("inputs", [](const EngineHandle& h) { return io_of(h, true); },
                             "The inputs (list of TensorInfo), in the model's order.")
      .def_property_readonly("outputs", [](const EngineHandle& h) { return io_of(h, false); },
                             "The outputs (list of TensorInfo), in the model's order.")
      .def_property_readonly("num_steps", [](const EngineHandle& h) { return h.get().num_steps(); },
                             "Number of execution steps (kernels) in the plan.")
      .def_property_readonly("device_memory_size", [](const EngineHandle& h) { return h.get().device_memory_size(); },
                             "Device bytes one execution context needs (activations and streaming scratch).")
      .def_property_readonly("weights_size", [](const EngineHandle& h) { return h.get().weights_size(); },
                             "Bytes of weights held by the plan.")
      .def_property_readonly("weights_stripped", [](const EngineHandle& h) { return h.get().weights_stripped(); },
                             "True for a plan built with strip_weights=True that was not refitted with every weight.")
      .def_property_readonly("streamable_weights_size",
                             [](const EngineHandle& h) { return h.get().streamable_weights_size(); },
                             "Bytes of weights that may stream from host memory (0 without weight_streaming).")
      .def_property("weight_streaming_budget", [](const EngineHandle& h) { return h.get().weight_streaming_budget(); },
                    &set_budget,
                    "Device bytes for streamable weights; the rest stream during each run. Set it to an int (bytes), "
                    "\"8GiB\", \"512MiB\", \"50%\" (of streamable_weights_size) or \"auto\"; reads back the bytes in "
                    "force. ValueError for a malformed value, InvalidStateError while execution contexts exist, "
                    "UnsupportedError for an engine without streamable weights.")
      .def_property_readonly("weight_streaming_automatic_budget",
                             [](const EngineHandle& h) { return h.get().weight_streaming_automatic_budget(); },
                             "The budget \"auto\" gives now (from free device memory).")
      .def_property_readonly("weight_streaming_scratch_size",
                             [](const EngineHandle& h) { return h.get().weight_streaming_scratch_size(); },
                             "Device bytes per context for weights in flight at the budget in force.")
      .def_property_readonly("minimum_device_memory", [](const EngineHandle& h) { return h.get().minimum_device_memory(); },
                             "The least device memory this engine runs in (budget 0).")
      .def_property_readonly("num_execution_contexts",
                             [](const EngineHandle& h) { return h.get().num_execution_contexts(); },
                             "Execution contexts of this engine alive now.")
      .def_property_readonly("closed", [](const EngineHandle& h) { return !h.engine; }, "True after close().")
      .def_property_readonly("build_report", &build_report,
                             "What build() did (nodes folded / fused, steps, sizes; cache hit or miss with cache_dir); "
                             "empty for a loaded engine.")
      .def_property_readonly(
          "weights", [](EngineHandle& h) { return unwrap(Refitter::create(live(h)))->weights(); },
          "Every weight of the plan (list of WeightInfo), in plan order.")
      .def(
          "create_execution_context",
          [](const std::shared_ptr<EngineHandle>& h) {
            auto c = std::make_shared<ContextHandle>();
            c->ctx = unwrap(h->get().create_execution_context());
            c->engine = h;
            std::erase_if(h->contexts, [](const std::weak_ptr<ContextHandle>& w) { return w.expired(); });
            h->contexts.push_back(c);
            return c;
          },
          "A new, independent ExecutionContext (one run at a time each; use one per thread).")
      .def("save", &save, py::arg("path"), "Writes the plan (with weights refitted since the load) to `path`.")
      .def("refit", &refit, py::arg("weights"),
           "Replaces weights without rebuilding: a dict name -> array (dtype and dims must match; see `weights`) or "
           "the path of an ONNX model of the same architecture. All or nothing; no execution context may be alive.")
      .def("close", &EngineHandle::close,
           "Frees the engine and the state of its execution contexts; using either afterwards raises InvalidStateError.")
      .def("__enter__", [](const std::shared_ptr<EngineHandle>& h) { return h; })
      .def("__exit__", [](EngineHandle& h, py::args) { h.close(); })
      .def("__repr__", [](const EngineHandle& h) {
        if (!h.engine) return "<streamrt.Engine '" + h.name + "' (closed)>";
        return "<streamrt.Engine '" + h.name + "' on " + device_type_name(h.engine->device()) + ", " +
               std::to_string(h.engine->num_steps()) + " steps>";
      });

  m.def("_build_onnx", &build_onnx, py::arg("path"), py::arg("device"), py::arg("precision"),
        py::arg("weight_streaming"), py::arg("shapes"), py::arg("profiles"), py::arg("tactics"), py::arg("allow_tf32"),
        py::arg("strip_weights"), py::arg("name"), py::arg("cache_dir"), py::arg("cache_max_size"),
        "Builds an ONNX file into an Engine (the implementation of streamrt.build; use that).");
  m.def(
      "load",
      [](py::handle source, const std::optional<std::string>& device, bool profile, const std::string& attention_kernel,
         const std::string& group_gemm_kernel, bool few_row_kernel, bool programmatic_launch,
         const std::string& step_times, const std::string& stream_trace) {
        const RuntimeOptions options =
            load_options(resolve_device(device), profile, attention_kernel, group_gemm_kernel, few_row_kernel,
                         programmatic_launch, step_times, stream_trace);
        if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source)) {
          std::string s = py::isinstance<py::bytes>(source) ? source.cast<std::string>()
                                                            : std::string(source.cast<py::bytearray>());
          return load_bytes(std::vector<uint8_t>(s.begin(), s.end()), options);
        }
        std::string path = fspath(source);
        py::gil_scoped_release release;
        auto rt = unwrap(Runtime::create(options));
        return wrap(unwrap(rt->load_engine(path)));
      },
      py::arg("plan"), py::arg("device") = py::none(), py::kw_only(), py::arg("profile") = false,
      py::arg("attention_kernel") = "auto", py::arg("group_gemm_kernel") = "auto", py::arg("few_row_kernel") = true,
      py::arg("programmatic_launch") = true, py::arg("step_times") = "", py::arg("stream_trace") = "",
      "Loads a plan (a path or the plan's bytes) on `device` (\"cpu\", \"cuda\"; None or \"auto\": CUDA when a GPU "
      "is present). A plan built for another device is IncompatibleError; a corrupt one InvalidPlanError.\n"
      "CUDA diagnostics, as `streamrt run`'s flags (the CPU ignores them): profile (a table of GPU time per op, "
      "printed to stderr when a context goes away), attention_kernel (\"auto\", \"simple\", \"mma\", \"wgmma\"), "
      "group_gemm_kernel (\"auto\", \"cublaslt\", \"group\"), few_row_kernel, programmatic_launch, step_times and "
      "stream_trace (JSON-lines files appended to). An unknown kernel name is InvalidArgumentError.");
}

}  // namespace streamrt::python
