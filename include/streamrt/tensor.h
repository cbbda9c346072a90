// streamrt::Tensor, the host tensor of the public API (program EValues, weights, test data):
// dtype + dims + bytes. The bytes are either owned (allocated here) or a
// read-only view into memory kept alive by a holder (e.g. an mmap'd plan file).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "streamrt/types.h"

namespace streamrt {

class Tensor {
 public:
  Tensor() = default;

  // Zero-initialized owned tensor. Fails on dynamic dims or absurd sizes.
  static Result<Tensor> allocate(DataType dtype, const Dims& dims);
  // Owned copy of `bytes` (size must equal numel * dtype_size).
  static Result<Tensor> from_bytes(DataType dtype, const Dims& dims, const void* bytes,
                                   size_t size);
  // Read-only view over external memory; `holder` keeps it alive.
  static Tensor view(DataType dtype, const Dims& dims, const void* data,
                     std::shared_ptr<const void> holder);
  // Scalar / 1-D helpers (mostly for tests and shape tensors).
  template <typename T>
  static Tensor from_vector(DataType dtype, const Dims& dims, const std::vector<T>& v);

  DataType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t numel() const { return dims_numel(dims_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return dtype_ == DataType::kUndefined; }
  bool writable() const { return writable_; }

  const void* data() const { return data_; }
  // Mutable access; only valid for owned tensors.
  void* mutable_data() { return writable_ ? const_cast<void*>(data_) : nullptr; }
  template <typename T> const T* data_as() const { return static_cast<const T*>(data_); }
  template <typename T> T* mutable_data_as() { return static_cast<T*>(mutable_data()); }

  // Reinterprets with new dims of the same element count (shares storage).
  Result<Tensor> reshaped(const Dims& dims) const;
  // Reinterprets the bytes as `dtype` of the same element size (shares storage); e.g. ONNX
  // test data that stores bfloat16 bits as uint16.
  Result<Tensor> retyped(DataType dtype) const;
  // Values of an integer tensor widened to int64 (for shape tensors and indices).
  Result<std::vector<int64_t>> to_int64_vector() const;
  // Values of a numeric tensor as float.
  Result<std::vector<float>> to_float_vector() const;
  // Values of a numeric tensor as double (exact for every type but 64-bit integers > 2^53).
  Result<std::vector<double>> to_double_vector() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Dims dims_;
  const void* data_ = nullptr;
  bool writable_ = false;
  std::shared_ptr<const void> holder_;
};

// numpy has no bfloat16: .npy files and ONNX test data (.pb) hold bfloat16 as uint16 bits.
// Returns `t` reinterpreted as bfloat16 when it is uint16 and `want` is bfloat16, else `t`.
Tensor uint16_bits_as(const Tensor& t, DataType want);

template <typename T>
Tensor Tensor::from_vector(DataType dtype, const Dims& dims, const std::vector<T>& v) {
  auto r = allocate(dtype, dims);
  Tensor t = std::move(r).value();
  if (t.nbytes()) std::memcpy(t.mutable_data(), v.data(), t.nbytes());
  return t;
}

}  // namespace streamrt
