// Python tensors as contiguous memory the runtime can read: numpy arrays (buffer protocol),
// DLPack producers (torch tensors, CPU or CUDA), and anything np.asarray accepts. No copy is made
// for a contiguous array of the expected dtype.
#pragma once

#include <string>

#include "common.h"
#include "dlpack.h"

namespace streamrt::python {

// A contiguous tensor in host or CUDA memory, kept alive by `owner` (an array) or by a DLPack
// capsule taken from its producer (its deleter runs when the view goes, with the GIL held).
class TensorView {
 public:
  TensorView() = default;
  TensorView(TensorView&& o) noexcept { *this = std::move(o); }
  TensorView& operator=(TensorView&& o) noexcept;
  TensorView(const TensorView&) = delete;
  TensorView& operator=(const TensorView&) = delete;
  ~TensorView() { release(); }

  DataType dtype = DataType::kUndefined;
  Dims dims;
  void* data = nullptr;
  size_t nbytes = 0;
  bool cuda = false;  // CUDA device memory (device_id); host memory otherwise
  int device_id = 0;
  py::object owner;

  // Memory to bind: `data`, or a dummy non-null address for an empty tensor (never read).
  void* address() const;

 private:
  friend TensorView view_dlpack(py::handle obj, DataType expected, const std::string& what, py::object stream);
  void release();
  dlpack::ManagedTensor* managed_ = nullptr;
};

// Views `obj` as a contiguous tensor of dtype `expected` (kUndefined: any dtype streamrt has).
// A numpy array or DLPack tensor of another dtype is InvalidArgumentError naming `what`; lists and
// scalars are converted to `expected`; non-contiguous arrays are copied. CUDA tensors are taken
// only when `cuda_stream` is given (the stream the consumer will use: an int, as DLPack wants);
// otherwise InvalidArgumentError.
TensorView view_tensor(py::handle obj, DataType expected, const std::string& what,
                       py::object cuda_stream = py::none());

// (device_type, device_id) of a DLPack producer; nullopt for objects without __dlpack_device__.
std::optional<std::pair<int, int>> dlpack_device(py::handle obj);

}  // namespace streamrt::python
