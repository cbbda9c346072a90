#include "tensors.h"

#include <Python.h>

#include <optional>

namespace streamrt::python {

namespace {

alignas(64) unsigned char g_empty[64];

constexpr char kCapsuleName[] = "dltensor";
constexpr char kUsedCapsuleName[] = "used_dltensor";

DataType from_dlpack_dtype(const dlpack::DataType& t) {
  if (t.lanes != 1) return DataType::kUndefined;
  switch (t.code) {
    case dlpack::kFloat:
      return t.bits == 32 ? DataType::kFloat32 : t.bits == 16 ? DataType::kFloat16
                                             : t.bits == 64 ? DataType::kFloat64 : DataType::kUndefined;
    case dlpack::kBfloat: return t.bits == 16 ? DataType::kBFloat16 : DataType::kUndefined;
    case dlpack::kInt:
      return t.bits == 64 ? DataType::kInt64 : t.bits == 32 ? DataType::kInt32
             : t.bits == 16 ? DataType::kInt16 : t.bits == 8 ? DataType::kInt8 : DataType::kUndefined;
    case dlpack::kUInt:
      return t.bits == 64 ? DataType::kUInt64 : t.bits == 32 ? DataType::kUInt32
             : t.bits == 16 ? DataType::kUInt16 : t.bits == 8 ? DataType::kUInt8 : DataType::kUndefined;
    case dlpack::kBool: return t.bits == 8 ? DataType::kBool : DataType::kUndefined;
    default: return DataType::kUndefined;
  }
}

std::string type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__qualname__")); }

void check_dtype(DataType got, DataType expected, const std::string& what, py::handle obj) {
  if (got == DataType::kUndefined)
    throw_invalid(what + ": " + type_name(obj) + " of a dtype streamrt does not have (" +
                  std::string(py::str(obj.attr("dtype"))) + ")");
  if (expected != DataType::kUndefined && got != expected)
    throw_invalid(what + ": dtype " + dtype_name(got) + ", expected " + dtype_name(expected) +
                  " (convert it first, e.g. .astype(\"" + dtype_name(expected) + "\") or .to(torch." +
                  dtype_name(expected) + "))");
}

Dims shape_of(const int64_t* shape, int ndim) { return Dims(shape, shape + ndim); }

TensorView view_numpy(py::array arr, DataType expected, const std::string& what) {
  DataType got = from_numpy_dtype(arr.dtype());
  check_dtype(got, expected, what, arr);
  if (!(arr.flags() & py::array::c_style) || !(arr.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    arr = py::module_::import("numpy").attr("ascontiguousarray")(arr);
  TensorView v;
  v.dtype = got;
  v.dims = Dims(arr.shape(), arr.shape() + arr.ndim());
  v.data = const_cast<void*>(arr.data());
  v.nbytes = static_cast<size_t>(arr.nbytes());
  v.owner = arr;
  return v;
}

bool compact(const dlpack::Tensor& t) {
  if (!t.strides) return true;
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

}  // namespace

TensorView& TensorView::operator=(TensorView&& o) noexcept {
  if (this != &o) {
    release();
    dtype = o.dtype;
    dims = std::move(o.dims);
    data = o.data;
    nbytes = o.nbytes;
    cuda = o.cuda;
    device_id = o.device_id;
    owner = std::move(o.owner);
    managed_ = o.managed_;
    o.managed_ = nullptr;
  }
  return *this;
}

void TensorView::release() {
  if (managed_ && managed_->deleter) managed_->deleter(managed_);
  managed_ = nullptr;
}

void* TensorView::address() const { return nbytes == 0 || !data ? static_cast<void*>(g_empty) : data; }

std::optional<std::pair<int, int>> dlpack_device(py::handle obj) {
  if (!py::hasattr(obj, "__dlpack_device__")) return std::nullopt;
  py::tuple dev = obj.attr("__dlpack_device__")();
  return std::make_pair(dev[0].cast<int>(), dev[1].cast<int>());
}

TensorView view_dlpack(py::handle obj_in, DataType expected, const std::string& what, py::object stream) {
  py::object obj = py::reinterpret_borrow<py::object>(obj_in);
  if (is_torch_tensor(obj)) {
    // Views the caller's memory as it is: autograd history and a lazy conjugate are irrelevant to
    // an inference run, and a non-contiguous tensor is copied once (like np.ascontiguousarray).
    if (obj.attr("requires_grad").cast<bool>()) obj = obj.attr("detach")();
    if (!obj.attr("is_contiguous")().cast<bool>()) obj = obj.attr("contiguous")();
  }
  auto dev = dlpack_device(obj);
  const bool on_cuda = dev && (dev->first == dlpack::kCUDA || dev->first == dlpack::kCUDAManaged);
  if (on_cuda && stream.is_none())
    throw_invalid(what + ": a " + type_name(obj) + " on cuda:" + std::to_string(dev->second) +
                  ", but the engine runs on the CPU (move it with .cpu())");
  if (dev && !on_cuda && dev->first != dlpack::kCPU && dev->first != dlpack::kCUDAHost)
    throw_invalid(what + ": a " + type_name(obj) + " on DLPack device type " + std::to_string(dev->first) +
                  "; streamrt takes CPU and CUDA memory");
  py::object capsule = on_cuda ? obj.attr("__dlpack__")(py::arg("stream") = stream) : obj.attr("__dlpack__")();
  auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (!managed) throw py::error_already_set();
  // The consumer owns the tensor from here on: rename the capsule so it does not free it too.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  TensorView v;
  v.managed_ = managed;
  v.owner = obj;
  const dlpack::Tensor& t = managed->dl_tensor;
  v.cuda = on_cuda;
  v.device_id = t.device.device_id;
  v.dtype = from_dlpack_dtype(t.dtype);
  check_dtype(v.dtype, expected, what, obj);
  if (!compact(t))
    throw_invalid(what + ": a non-contiguous " + type_name(obj) + "; pass a contiguous copy");
  v.dims = shape_of(t.shape, t.ndim);
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  auto numel = checked_numel(v.dims);
  if (!numel.ok()) throw_invalid(what + ": " + numel.status().message());
  v.nbytes = static_cast<size_t>(*numel) * dtype_size(v.dtype);
  return v;
}

TensorView view_tensor(py::handle obj, DataType expected, const std::string& what, py::object cuda_stream) {
  if (py::isinstance<py::array>(obj)) return view_numpy(py::reinterpret_borrow<py::array>(obj), expected, what);
  if (py::hasattr(obj, "__dlpack__")) return view_dlpack(obj, expected, what, std::move(cuda_stream));
  // Lists, scalars, objects with __array__: numpy builds the array in the expected dtype.
  py::object np = py::module_::import("numpy");
  py::object arr = expected == DataType::kUndefined ? np.attr("asarray")(obj)
                                                    : np.attr("asarray")(obj, numpy_dtype(expected));
  return view_numpy(arr, expected, what);
}

}  // namespace streamrt::python
