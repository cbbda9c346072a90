// Shared pieces of the extension streamrt._C: turning a Status into the Python exception of its
// code (classes in streamrt/_errors.py), dtypes between streamrt, numpy and torch, and the
// registration functions of each part (engine.cc, context.cc, program.cc).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>

#include "streamrt/status.h"
#include "streamrt/types.h"

namespace streamrt::python {

namespace py = pybind11;

// Carries a non-OK Status out of a binding; the translator registered in module.cc raises the
// streamrt.Error subclass of its code with the library's message.
struct StatusError {
  Status status;
};

[[noreturn]] inline void throw_status(Status st) { throw StatusError{std::move(st)}; }
inline void check(const Status& st) {
  if (!st.ok()) throw_status(st);
}
template <typename T>
T unwrap(Result<T> r) {
  if (!r.ok()) throw_status(r.status());
  return std::move(r).value();
}
// A ValueError that is also streamrt.InvalidArgumentError (bad arguments found by the bindings).
[[noreturn]] inline void throw_invalid(std::string msg) { throw_status(invalid_argument(std::move(msg))); }

// Sets the Python error for `st` (the exception translator's work; also used directly).
void set_python_error(const Status& st);

// numpy dtype of a streamrt dtype (bfloat16 through ml_dtypes; UnsupportedError without it).
py::dtype numpy_dtype(DataType t);
// streamrt dtype of a numpy dtype; kUndefined for one streamrt has no counterpart for.
DataType from_numpy_dtype(const py::dtype& d);
// torch.<dtype> of a streamrt dtype (torch must be importable).
py::object torch_dtype(DataType t);
// Dims from a Python sequence of ints (ValueError naming `what` otherwise).
Dims to_dims(const py::handle& seq, const std::string& what);
py::tuple dims_tuple(const Dims& d);
// True when torch is imported and `obj` is a torch.Tensor.
bool is_torch_tensor(const py::handle& obj);

void register_engine(py::module_& m);
void register_context(py::module_& m);
void register_program(py::module_& m);

}  // namespace streamrt::python
