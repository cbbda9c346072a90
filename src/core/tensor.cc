#include "core/tensor.h"

#include "core/float16.h"

namespace streamrt {

namespace {
// Refuse single host tensors above 64 GiB: a claimed size this large is a corrupt input.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;
}  // namespace

Result<Tensor> Tensor::allocate(DataType dtype, const Dims& dims) {
  if (dtype == DataType::kUndefined) return invalid_argument("cannot allocate an undefined dtype");
  auto numel = checked_numel(dims, kMaxTensorBytes / static_cast<int64_t>(dtype_size(dtype)));
  if (!numel.ok()) return numel.status();
  size_t bytes = static_cast<size_t>(*numel) * dtype_size(dtype);
  // Align to 64 bytes so kernels may use wide loads.
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (!p) return out_of_memory("host allocation of " + std::to_string(bytes) + " bytes failed");
  std::memset(p, 0, alloc);
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = dims;
  t.data_ = p;
  t.writable_ = true;
  t.holder_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  return t;
}

Result<Tensor> Tensor::from_bytes(DataType dtype, const Dims& dims, const void* bytes, size_t size) {
  auto t = allocate(dtype, dims);
  if (!t.ok()) return t.status();
  if (t->nbytes() != size)
    return invalid_argument("tensor of " + dims_to_string(dims) + " " + dtype_name(dtype) +
                            " needs " + std::to_string(t->nbytes()) + " bytes, got " +
                            std::to_string(size));
  if (size) std::memcpy(t->mutable_data(), bytes, size);
  return t;
}

Tensor Tensor::view(DataType dtype, const Dims& dims, const void* data,
                    std::shared_ptr<const void> holder) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = dims;
  t.data_ = data;
  t.writable_ = false;
  t.holder_ = std::move(holder);
  return t;
}

Result<Tensor> Tensor::reshaped(const Dims& dims) const {
  if (!dims_static(dims) || dims_numel(dims) != numel())
    return invalid_argument("cannot reshape " + dims_to_string(dims_) + " to " +
                            dims_to_string(dims));
  Tensor t = *this;
  t.dims_ = dims;
  return t;
}

Result<Tensor> Tensor::retyped(DataType dtype) const {
  if (dtype == DataType::kUndefined || dtype_size(dtype) != dtype_size(dtype_))
    return invalid_argument(std::string("cannot reinterpret ") + dtype_name(dtype_) + " as " +
                            dtype_name(dtype));
  Tensor t = *this;
  t.dtype_ = dtype;
  return t;
}

Tensor uint16_bits_as(const Tensor& t, DataType want) {
  if (t.dtype() != DataType::kUInt16 || want != DataType::kBFloat16) return t;
  return t.retyped(want).value();  // same element size: cannot fail
}

Result<std::vector<int64_t>> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype_) {
      case DataType::kInt64: out[i] = data_as<int64_t>()[i]; break;
      case DataType::kInt32: out[i] = data_as<int32_t>()[i]; break;
      case DataType::kInt16: out[i] = data_as<int16_t>()[i]; break;
      case DataType::kInt8: out[i] = data_as<int8_t>()[i]; break;
      case DataType::kUInt8: out[i] = data_as<uint8_t>()[i]; break;
      case DataType::kUInt16: out[i] = data_as<uint16_t>()[i]; break;
      case DataType::kUInt32: out[i] = data_as<uint32_t>()[i]; break;
      case DataType::kUInt64: {
        const uint64_t v = data_as<uint64_t>()[i];
        if (v > static_cast<uint64_t>(INT64_MAX))
          return invalid_argument("uint64 value " + std::to_string(v) + " does not fit int64");
        out[i] = static_cast<int64_t>(v);
        break;
      }
      case DataType::kBool: out[i] = data_as<uint8_t>()[i] != 0; break;
      default: return invalid_argument(std::string("expected an integer tensor, got ") +
                                       dtype_name(dtype_));
    }
  }
  return out;
}

Result<std::vector<double>> Tensor::to_double_vector() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype_) {
      case DataType::kFloat32: out[i] = data_as<float>()[i]; break;
      case DataType::kFloat64: out[i] = data_as<double>()[i]; break;
      case DataType::kFloat16: out[i] = Half::to_float(data_as<uint16_t>()[i]); break;
      case DataType::kBFloat16: out[i] = BFloat16::to_float(data_as<uint16_t>()[i]); break;
      case DataType::kInt64: out[i] = static_cast<double>(data_as<int64_t>()[i]); break;
      case DataType::kInt32: out[i] = data_as<int32_t>()[i]; break;
      case DataType::kInt16: out[i] = data_as<int16_t>()[i]; break;
      case DataType::kInt8: out[i] = data_as<int8_t>()[i]; break;
      case DataType::kUInt8: out[i] = data_as<uint8_t>()[i]; break;
      case DataType::kUInt16: out[i] = data_as<uint16_t>()[i]; break;
      case DataType::kUInt32: out[i] = data_as<uint32_t>()[i]; break;
      case DataType::kUInt64: out[i] = static_cast<double>(data_as<uint64_t>()[i]); break;
      case DataType::kBool: out[i] = data_as<uint8_t>()[i] ? 1.0 : 0.0; break;
      default: return invalid_argument("tensor has no data type");
    }
  }
  return out;
}

Result<std::vector<float>> Tensor::to_float_vector() const {
  SRT_ASSIGN_OR_RETURN(std::vector<double> d, to_double_vector());
  return std::vector<float>(d.begin(), d.end());
}

}  // namespace streamrt
