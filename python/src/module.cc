// streamrt._C: the extension module. Its parts register themselves (engine.cc, context.cc,
// program.cc); this file holds what they share: Status -> exception, dtype conversions.
#include <Python.h>

#include <vector>

#include "common.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::python {

void set_python_error(const Status& st) {
  // The classes live in Python (streamrt/_errors.py) so that they can derive from ValueError,
  // OSError and MemoryError too, and carry their docstrings.
  try {
    py::object errors = py::module_::import("streamrt._errors");
    py::object exc = errors.attr("_from_status")(status_code_name(st.code()), st.message());
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (py::error_already_set& e) {
    e.restore();  // the import failed: its error is the one to see
  }
}

py::dtype numpy_dtype(DataType t) {
  if (t == DataType::kBFloat16) {
    py::module_ ml;
    try {
      ml = py::module_::import("ml_dtypes");
    } catch (py::error_already_set&) {
      throw_status(unsupported("bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes), or pass "
                               "and receive torch tensors"));
    }
    return py::dtype::from_args(ml.attr("bfloat16"));
  }
  if (t == DataType::kUndefined) throw_status(internal_error("no numpy dtype for an undefined dtype"));
  return py::dtype(std::string(dtype_name(t)));
}

DataType from_numpy_dtype(const py::dtype& d) {
  static const DataType kAll[] = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt64,
                                  DataType::kInt32,   DataType::kInt16,   DataType::kInt8,    DataType::kUInt8,
                                  DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64,  DataType::kBool};
  for (DataType t : kAll)
    if (d.equal(py::dtype(std::string(dtype_name(t))))) return t;
  if (py::str(d.attr("name")).cast<std::string>() == "bfloat16") return DataType::kBFloat16;
  return DataType::kUndefined;
}

py::object torch_dtype(DataType t) {
  if (t == DataType::kUndefined) throw_status(internal_error("no torch dtype for an undefined dtype"));
  return py::module_::import("torch").attr(dtype_name(t));
}

Dims to_dims(const py::handle& seq, const std::string& what) {
  if (!py::isinstance<py::sequence>(seq) || py::isinstance<py::str>(seq))
    throw_invalid(what + ": expected a sequence of ints, got " + std::string(py::str(py::type::of(seq).attr("__name__"))));
  Dims dims;
  for (py::handle item : seq) {
    if (py::isinstance<py::bool_>(item) || !py::isinstance<py::int_>(item))
      throw_invalid(what + ": expected a sequence of ints, got an element " + std::string(py::repr(item)));
    dims.push_back(item.cast<int64_t>());
  }
  return dims;
}

py::tuple dims_tuple(const Dims& d) {
  py::tuple t(d.size());
  for (size_t i = 0; i < d.size(); ++i) t[i] = py::int_(d[i]);
  return t;
}

bool is_torch_tensor(const py::handle& obj) {
  PyObject* torch = PyImport_GetModule(py::str("torch").ptr());  // only when already imported
  if (!torch) {
    PyErr_Clear();
    return false;
  }
  py::object mod = py::reinterpret_steal<py::object>(torch);
  return py::isinstance(obj, mod.attr("Tensor"));
}

}  // namespace streamrt::python

PYBIND11_MODULE(_C, m) {
  using namespace streamrt::python;
  m.doc() = "streamrt's C++ bindings; use the package `streamrt`, which re-exports them.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      set_python_error(e.status);
    }
  });
  m.attr("__version__") = STREAMRT_VERSION;
  m.def(
      "cuda_available",
      []() {
#ifdef STREAMRT_WITH_CUDA
        auto rt = streamrt::Runtime::create({streamrt::DeviceType::kCuda});
        return rt.ok();
#else
        return false;
#endif
      },
      "True when this build of streamrt has the CUDA backend and a GPU answers.");
  m.def(
      "parse_weight_quant",
      [](const std::string& spec) {
        auto q = streamrt::parse_weight_quant(spec);
        if (!q.ok()) throw_invalid("weight_quant: " + q.status().message());
        return streamrt::weight_quant_name(*q);
      },
      py::arg("spec"),
      "The canonical name of a weight_quant spec (\"int4\" -> \"int4:128\"); ValueError for a bad one.");
  m.def(
      "has_cuda_backend",
      []() {
#ifdef STREAMRT_WITH_CUDA
        return true;
#else
        return false;
#endif
      },
      "True when this build of streamrt includes the CUDA backend (whether or not a GPU is present).");
  register_engine(m);
  register_context(m);
  register_program(m);
}
