// streamrt.Module over the program runtime (include/streamrt/program.h) and _compile_onnx, the
// implementation of streamrt.compile (an ONNX model -> a .pte program file).
#include <cstring>
#include <shared_mutex>

#include "delegate/compile.h"
#include "handles.h"
#include "program/program_format.h"
#include "streamrt/program.h"
#include "tensors.h"

namespace streamrt::python {

namespace {

struct ModuleHandle {
  std::unique_ptr<Module> module;
  std::string path;
  mutable std::shared_mutex mu;  // forward / execute: shared; close: exclusive

  Module& get() const {
    if (!module) throw_status(invalid_state("module '" + path + "' is closed"));
    return *module;
  }
};

BackendOptions to_backend_options(const std::string& backend, py::handle opts) {
  if (!py::isinstance<py::dict>(opts)) throw py::type_error("backend_options['" + backend + "']: expected a dict");
  BackendOptions o;
  for (auto [k, v] : opts.cast<py::dict>()) {
    std::string key = py::str(k);
    if (py::isinstance<py::bool_>(v)) o.set_option(key, v.cast<bool>());
    else if (py::isinstance<py::int_>(v)) o.set_option(key, v.cast<int64_t>());
    else if (py::isinstance<py::str>(v)) o.set_option(key, v.cast<std::string>());
    else
      throw py::type_error("backend_options['" + backend + "']['" + key + "']: expected a bool, an int or a string");
  }
  return o;
}

LoadBackendOptionsMap to_options_map(py::handle obj) {
  LoadBackendOptionsMap map;
  if (obj.is_none()) return map;
  if (!py::isinstance<py::dict>(obj))
    throw py::type_error("backend_options: expected a dict backend name -> {key: value}");
  for (auto [k, v] : obj.cast<py::dict>()) {
    std::string backend = py::str(k);
    check(map.set_options(backend, to_backend_options(backend, v)));
  }
  return map;
}

py::object option_value(const BackendOptionValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return py::bool_(*b);
  if (auto* i = std::get_if<int64_t>(&v)) return py::int_(*i);
  return py::str(std::get<std::string>(v));
}

// Method inputs: tensors are viewed without a copy (kept alive by `keep` until the call returns).
EValue to_evalue(py::handle v, std::vector<TensorView>& keep, bool& torch, const std::string& what) {
  if (v.is_none()) return EValue();
  if (py::isinstance<py::bool_>(v)) return EValue(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return EValue(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return EValue(v.cast<double>());
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    bool all_bool = true, all_int = true, all_num = true;
    for (py::handle x : seq) {
      const bool b = py::isinstance<py::bool_>(x), i = py::isinstance<py::int_>(x) && !b;
      all_bool &= b;
      all_int &= i;
      all_num &= i || py::isinstance<py::float_>(x);
    }
    if (all_int) return EValue(seq.cast<std::vector<int64_t>>());
    if (all_bool) return EValue(seq.cast<std::vector<bool>>());
    if (all_num) return EValue(seq.cast<std::vector<double>>());
    std::vector<Tensor> list;
    for (size_t i = 0; i < seq.size(); ++i) {
      EValue e = to_evalue(seq[i], keep, torch, what + "[" + std::to_string(i) + "]");
      if (!e.is_tensor()) throw_invalid(what + ": a list mixing tensors and other values");
      list.push_back(*e.tensor());
    }
    return EValue(std::move(list));
  }
  torch |= is_torch_tensor(v);
  keep.push_back(view_tensor(v, DataType::kUndefined, what));
  const TensorView& t = keep.back();
  return EValue(Tensor::view(t.dtype, t.dims, t.address(), nullptr));
}

py::object tensor_to_python(Tensor t, bool torch) {
  py::dtype dt = t.dtype() == DataType::kBFloat16 && torch ? py::dtype("uint16") : numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
  py::array arr;
  if (t.writable()) {  // owned by the output: handed over without a copy
    auto* owned = new Tensor(std::move(t));
    py::capsule cap(owned, [](void* p) { delete static_cast<Tensor*>(p); });
    arr = py::array(dt, shape, {}, owned->mutable_data(), cap);
  } else {  // a view (of an input, of the program's constants): copied
    arr = py::array(dt, shape);
    if (t.nbytes()) std::memcpy(arr.mutable_data(), t.data(), t.nbytes());
  }
  if (!torch) return arr;
  py::object tt = py::module_::import("torch").attr("from_numpy")(arr);
  return t.dtype() == DataType::kBFloat16 ? tt.attr("view")(torch_dtype(DataType::kBFloat16)) : tt;
}

py::object from_evalue(EValue& v, bool torch) {
  switch (v.tag()) {
    case EValue::Tag::kNone: return py::none();
    case EValue::Tag::kTensor: return tensor_to_python(std::move(*v.tensor()), torch);
    case EValue::Tag::kInt: return py::int_(*v.to_int());
    case EValue::Tag::kDouble: return py::float_(*v.to_double());
    case EValue::Tag::kBool: return py::bool_(*v.to_bool());
    case EValue::Tag::kIntList: return py::cast(*v.int_list());
    case EValue::Tag::kDoubleList: return py::cast(*v.double_list());
    case EValue::Tag::kBoolList: return py::cast(*v.bool_list());
    case EValue::Tag::kTensorList: {
      py::list out;
      for (const Tensor& t : *v.tensor_list()) out.append(tensor_to_python(t, torch));
      return out;
    }
  }
  return py::none();
}

py::list execute(const ModuleHandle& h, const std::string& method, py::handle inputs) {
  if (!py::isinstance<py::list>(inputs) && !py::isinstance<py::tuple>(inputs))
    throw py::type_error(method + ": expected a list of inputs");
  std::vector<TensorView> keep;
  std::vector<EValue> values;
  bool torch = false;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
  for (size_t i = 0; i < seq.size(); ++i)
    values.push_back(to_evalue(seq[i], keep, torch, method + " input " + std::to_string(i)));
  Result<std::vector<EValue>> out = Status(StatusCode::kInternal, "not run");
  {
    py::gil_scoped_release release;
    std::shared_lock lock(h.mu);
    out = h.get().execute(method, std::move(values));
  }
  py::list result;
  for (EValue& v : unwrap(std::move(out))) result.append(from_evalue(v, torch));
  return result;
}

py::dict compile_onnx(const std::string& model, const std::string& output, const std::optional<std::string>& device,
                      bool weight_streaming, const py::dict& shapes, const std::vector<std::string>& fallback_ops,
                      py::object budget, py::object budget_per_engine, const py::kwargs& sizes) {
  delegate::CompileOptions o;
  o.builder = make_config(resolve_device(device), "float32", weight_streaming, shapes, py::dict(), sizes);
  o.fallback_ops.insert(fallback_ops.begin(), fallback_ops.end());
  auto budget_text = [](py::handle v) {
    return py::isinstance<py::int_>(v) && !py::isinstance<py::bool_>(v) ? std::string(py::str(v)) : v.cast<std::string>();
  };
  if (!budget.is_none()) o.budget = budget_text(budget);
  if (!budget_per_engine.is_none()) o.budget_per_engine = budget_text(budget_per_engine);
  Result<delegate::CompiledProgram> compiled = Status(StatusCode::kInternal, "not compiled");
  {
    py::gil_scoped_release release;
    compiled = delegate::compile_onnx(model, o);
    if (compiled.ok()) check(program::write_program(compiled->data, compiled->segments, output));
  }
  check(compiled.status());
  py::dict report;
  py::list engines;
  for (const auto& e : compiled->report.engines) {
    py::dict d;
    d["name"] = e.name;
    d["nodes"] = e.nodes;
    d["steps"] = e.steps;
    d["streamable_size"] = e.streamable_size;
    engines.append(d);
  }
  report["engines"] = engines;
  report["kernel_calls"] = py::cast(compiled->report.kernel_calls);
  return report;
}

}  // namespace

void register_program(py::module_& m) {
  py::class_<ModuleHandle, std::shared_ptr<ModuleHandle>>(
      m, "Module",
      "A program file (.pte) loaded with every method, over streamrt's program runtime (ExecuTorch's "
      "extension.Module). Delegated subgraphs run as StreamRT engines; the rest as portable CPU kernels. "
      "forward / execute may run on several threads at once.")
      .def(py::init([](py::handle path, py::handle backend_options) {
             auto h = std::make_shared<ModuleHandle>();
             h->path = fspath(path);
             LoadBackendOptionsMap opts = to_options_map(backend_options);
             h->module = std::make_unique<Module>(h->path);
             py::gil_scoped_release release;
             check(h->module->load(opts));
             return h;
           }),
           py::arg("path"), py::arg("backend_options") = py::none(),
           "Loads `path` and every method. backend_options: {backend name: {key: bool | int | str}}, e.g. "
           "{\"StreamRTBackend\": {\"weight_streaming_budget\": \"4GiB\"}}. IoError, InvalidProgramError, "
           "IncompatibleError, NotFoundError (a method's kernel or backend), or the backend's error.")
      .def(
          "forward", [](const ModuleHandle& h, py::handle inputs) { return execute(h, "forward", inputs); },
          py::arg("inputs"),
          "Runs method \"forward\" on a list of inputs (arrays / torch tensors, ints, floats, bools, lists) and "
          "returns its outputs as a list (numpy arrays, or torch tensors when an input was one).")
      .def("execute", &execute, py::arg("method"), py::arg("inputs"), "Runs method `method`; see forward().")
      .def_property_readonly(
          "method_names", [](const ModuleHandle& h) { return h.get().method_names(); }, "Names of the methods.")
      .def(
          "set_backend_option",
          [](const ModuleHandle& h, const std::string& backend, py::handle options) {
            BackendOptions o = to_backend_options(backend, options);
            py::gil_scoped_release release;
            std::shared_lock lock(h.mu);
            check(h.get().set_backend_option(backend, o));
          },
          py::arg("backend"), py::arg("options"),
          "Changes options of a loaded backend live, e.g. set_backend_option(\"StreamRTBackend\", "
          "{\"weight_streaming_budget\": \"50%\"}). NotFoundError when no method uses `backend`.")
      .def(
          "get_backend_option",
          [](const ModuleHandle& h, const std::string& backend, const std::vector<std::string>& keys) {
            std::vector<BackendOption> opts;
            for (const auto& k : keys) opts.push_back({k, std::string()});
            check(h.get().get_backend_option(backend, opts));
            py::dict out;
            for (const auto& o : opts) out[py::str(o.key)] = option_value(o.value);
            return out;
          },
          py::arg("backend"), py::arg("keys"),
          "Values a backend reports, e.g. get_backend_option(\"StreamRTBackend\", [\"weight_streaming_budget\", "
          "\"streamable_weights_size\", \"num_engines\"]) (byte counts as decimal strings).")
      .def(
          "close",
          [](ModuleHandle& h) {
            py::gil_scoped_release release;
            std::unique_lock lock(h.mu);
            h.module.reset();
          },
          "Frees the program and its engines; later calls raise InvalidStateError.")
      .def("__enter__", [](const std::shared_ptr<ModuleHandle>& h) { return h; })
      .def("__exit__", [](ModuleHandle& h, py::args) {
        py::gil_scoped_release release;
        std::unique_lock lock(h.mu);
        h.module.reset();
      })
      .def("__repr__", [](const ModuleHandle& h) {
        return "<streamrt.Module '" + h.path + "'" + (h.module ? "" : " (closed)") + ">";
      });

  m.def("_compile_onnx", &compile_onnx, py::arg("model"), py::arg("output"), py::arg("device"),
        py::arg("weight_streaming"), py::arg("shapes"), py::arg("fallback_ops"), py::arg("budget"),
        py::arg("budget_per_engine"),
        "Compiles an ONNX file into a program file (the implementation of streamrt.compile; use that).");
}

}  // namespace streamrt::python
