#include "onnx/tensor_proto.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/file_io.h"
#include "core/float16.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx-data.pb.h"

namespace streamrt::onnx_import {

Result<DataType> dtype_from_onnx(int t, const std::string& what) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT: return DataType::kFloat32;
    case onnx::TensorProto_DataType_FLOAT16: return DataType::kFloat16;
    case onnx::TensorProto_DataType_BFLOAT16: return DataType::kBFloat16;
    case onnx::TensorProto_DataType_INT64: return DataType::kInt64;
    case onnx::TensorProto_DataType_INT32: return DataType::kInt32;
    case onnx::TensorProto_DataType_INT8: return DataType::kInt8;
    case onnx::TensorProto_DataType_UINT8: return DataType::kUInt8;
    case onnx::TensorProto_DataType_BOOL: return DataType::kBool;
    case onnx::TensorProto_DataType_DOUBLE: return DataType::kFloat64;
    case onnx::TensorProto_DataType_INT16: return DataType::kInt16;
    case onnx::TensorProto_DataType_UINT16: return DataType::kUInt16;
    case onnx::TensorProto_DataType_UINT32: return DataType::kUInt32;
    case onnx::TensorProto_DataType_UINT64: return DataType::kUInt64;
    default: break;
  }
  std::string name = onnx::TensorProto_DataType_IsValid(t)
                         ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t))
                         : std::string("#").append(std::to_string(t));
  return unsupported(what + ": ONNX data type " + name + " is not supported");
}

int dtype_to_onnx(DataType t) {
  switch (t) {
    case DataType::kFloat32: return onnx::TensorProto_DataType_FLOAT;
    case DataType::kFloat16: return onnx::TensorProto_DataType_FLOAT16;
    case DataType::kBFloat16: return onnx::TensorProto_DataType_BFLOAT16;
    case DataType::kInt64: return onnx::TensorProto_DataType_INT64;
    case DataType::kInt32: return onnx::TensorProto_DataType_INT32;
    case DataType::kInt8: return onnx::TensorProto_DataType_INT8;
    case DataType::kUInt8: return onnx::TensorProto_DataType_UINT8;
    case DataType::kBool: return onnx::TensorProto_DataType_BOOL;
    case DataType::kFloat64: return onnx::TensorProto_DataType_DOUBLE;
    case DataType::kInt16: return onnx::TensorProto_DataType_INT16;
    case DataType::kUInt16: return onnx::TensorProto_DataType_UINT16;
    case DataType::kUInt32: return onnx::TensorProto_DataType_UINT32;
    case DataType::kUInt64: return onnx::TensorProto_DataType_UINT64;
    default: return onnx::TensorProto_DataType_UNDEFINED;
  }
}

namespace {

// Resolves an external data location safely inside base_dir.
Result<std::string> resolve_external_path(const std::string& location, const std::string& base_dir,
                                          const std::string& what) {
  if (location.empty()) return invalid_model(what + ": external data has no location");
  if (location[0] == '/')
    return invalid_model(what + ": external data path '" + location + "' is absolute");
  std::stringstream ss(location);
  std::string part;
  while (std::getline(ss, part, '/'))
    if (part == "..")
      return invalid_model(what + ": external data path '" + location + "' contains '..'");
  char base_real[PATH_MAX], file_real[PATH_MAX];
  if (!realpath(base_dir.empty() ? "." : base_dir.c_str(), base_real))
    return io_error(what + ": cannot resolve model folder '" + base_dir + "'");
  std::string full = (base_dir.empty() ? std::string(".") : base_dir) + "/" + location;
  if (!realpath(full.c_str(), file_real))
    return io_error(what + ": external data file '" + full + "' not found");
  std::string b(base_real), f(file_real);
  if (b.back() != '/') b += '/';  // "/model" must not admit "/model2/x"; "/" admits all
  if (f.compare(0, b.size(), b) != 0)
    return invalid_model(what + ": external data path '" + location +
                         "' resolves outside the model's folder");
  return f;
}

// Reads an external tensor of `nbytes` bytes. The file and the range are checked before the
// tensor is allocated, so a tiny model cannot claim gigabytes it does not have.
Result<Tensor> read_external(const onnx::TensorProto& p, const std::string& base_dir, DataType dtype,
                             const Dims& dims, uint64_t need, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    auto parse = [&](int64_t& out) -> Status {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end || errno || v < 0)
        return invalid_model(what + ": bad external data " + kv.key() + " '" + kv.value() + "'");
      out = v;
      return ok_status();
    };
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") SRT_RETURN_IF_ERROR(parse(offset));
    else if (kv.key() == "length") SRT_RETURN_IF_ERROR(parse(length));
  }
  SRT_ASSIGN_OR_RETURN(std::string path, resolve_external_path(location, base_dir, what));
  // The resolved path holds no links; O_NOFOLLOW keeps a link swapped in since from being
  // followed, and the non-blocking open keeps a FIFO from stalling the import.
  auto opened = InputFile::open(path, {UINT64_MAX, /*follow_symlinks=*/false});
  if (!opened.ok()) return opened.status().with_context(what + ": external data '" + location + "'");
  const InputFile& file = *opened;
  const uint64_t size = file.size();
  if (length >= 0 && static_cast<uint64_t>(length) != need)
    return invalid_model(what + ": external data length " + std::to_string(length) +
                         " does not match the tensor's " + std::to_string(need) + " bytes");
  if (static_cast<uint64_t>(offset) > size || need > size - static_cast<uint64_t>(offset))
    return invalid_model(what + ": external data (offset " + std::to_string(offset) + " + " +
                         std::to_string(need) + " bytes) extends past the end of '" + path +
                         "' (" + std::to_string(size) + " bytes)");
  SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, dims));
  SRT_RETURN_IF_ERROR(file.read_at(t.mutable_data(), need, static_cast<uint64_t>(offset)).with_context(what));
  return t;
}

template <typename Src, typename Fn>
Status copy_typed(const Src& field, int64_t numel, const std::string& what, Fn&& put) {
  if (field.size() != numel)
    return invalid_model(what + ": holds " + std::to_string(field.size()) + " values, shape needs " +
                         std::to_string(numel));
  for (int64_t i = 0; i < numel; ++i) put(i, field.Get(static_cast<int>(i)));
  return ok_status();
}

// ONNX INT4 / UINT4 (opset 21; the linked onnx 1.12 has no names for them): two values a byte,
// the first in the low nibble, in raw_data, int32_data (one byte each) or external data.
constexpr int kOnnxUInt4 = 21, kOnnxInt4 = 22;

// A 4-bit tensor as int8 (INT4, sign-extended) / uint8 (UINT4), one value a byte: streamrt has
// no 4-bit type, and DequantizeLinear, the op that reads such weights, computes the same values
// from either (builder/import_quantized.cc packs them back to 4 bits for WeightOnlyMatMul).
Result<Tensor> tensor_from_4bit_proto(const onnx::TensorProto& p, const std::string& base_dir, const Dims& dims,
                                      int64_t numel, const std::string& what) {
  const bool is_signed = p.data_type() == kOnnxInt4;
  const int64_t packed = (numel + 1) / 2;
  Tensor bytes;
  if (p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    SRT_ASSIGN_OR_RETURN(bytes, read_external(p, base_dir, DataType::kUInt8, {packed}, static_cast<uint64_t>(packed), what));
  } else if (p.has_raw_data()) {
    if (p.raw_data().size() != static_cast<uint64_t>(packed))
      return invalid_model(what + ": raw_data has " + std::to_string(p.raw_data().size()) + " bytes, " +
                           std::to_string(numel) + " 4-bit values need " + std::to_string(packed));
    SRT_ASSIGN_OR_RETURN(bytes, Tensor::from_bytes(DataType::kUInt8, {packed}, p.raw_data().data(), packed));
  } else {
    SRT_ASSIGN_OR_RETURN(bytes, Tensor::allocate(DataType::kUInt8, {packed}));
    uint8_t* d = bytes.mutable_data_as<uint8_t>();
    SRT_RETURN_IF_ERROR(copy_typed(p.int32_data(), packed, what + " (4-bit pairs)",
                                   [&](int64_t i, int32_t v) { d[i] = static_cast<uint8_t>(v); }));
  }
  SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(is_signed ? DataType::kInt8 : DataType::kUInt8, dims));
  const uint8_t* src = bytes.data_as<uint8_t>();
  uint8_t* out = t.mutable_data_as<uint8_t>();
  for (int64_t i = 0; i < numel; ++i) {
    const int v = (src[i / 2] >> (i % 2 ? 4 : 0)) & 15;
    out[i] = static_cast<uint8_t>(is_signed && v >= 8 ? v - 16 : v);
  }
  return t;
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  const std::string what = "tensor '" + p.name() + "'";
  Dims dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) return invalid_model(what + ": negative dimension in " + dims_to_string(dims));
  if (p.data_type() == kOnnxInt4 || p.data_type() == kOnnxUInt4) {
    SRT_ASSIGN_OR_RETURN(int64_t n4, checked_numel(dims, INT64_MAX / 8));
    return tensor_from_4bit_proto(p, base_dir, dims, n4, what);
  }
  SRT_ASSIGN_OR_RETURN(DataType dtype, dtype_from_onnx(p.data_type(), what));
  // Validate the claimed size against the bytes actually present before allocating.
  SRT_ASSIGN_OR_RETURN(int64_t numel, checked_numel(dims, INT64_MAX / 8));
  const uint64_t nbytes = static_cast<uint64_t>(numel) * dtype_size(dtype);
  const bool external = p.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
  if (!external) {
    uint64_t have = p.has_raw_data() ? p.raw_data().size()
                    : static_cast<uint64_t>(p.float_data_size() + p.int32_data_size()) * 4 +
                          static_cast<uint64_t>(p.int64_data_size() + p.double_data_size() +
                                                p.uint64_data_size()) * 8;
    if (p.has_raw_data() && have != nbytes)
      return invalid_model(what + ": raw_data has " + std::to_string(have) + " bytes, shape " +
                           dims_to_string(dims) + " " + dtype_name(dtype) + " needs " +
                           std::to_string(nbytes));
    if (!p.has_raw_data() && static_cast<uint64_t>(numel) > have)
      return invalid_model(what + ": holds fewer values than its shape " + dims_to_string(dims));
  }
  if (external) return read_external(p, base_dir, dtype, dims, nbytes, what);
  SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, dims));
  if (p.has_raw_data()) {
    if (nbytes) std::memcpy(t.mutable_data(), p.raw_data().data(), nbytes);
    return t;
  }
  void* d = t.mutable_data();
  switch (dtype) {
    case DataType::kFloat32:
      SRT_RETURN_IF_ERROR(copy_typed(p.float_data(), numel, what,
                                     [&](int64_t i, float v) { static_cast<float*>(d)[i] = v; }));
      break;
    case DataType::kInt64:
      SRT_RETURN_IF_ERROR(copy_typed(p.int64_data(), numel, what,
                                     [&](int64_t i, int64_t v) { static_cast<int64_t*>(d)[i] = v; }));
      break;
    case DataType::kInt32:
      SRT_RETURN_IF_ERROR(copy_typed(p.int32_data(), numel, what,
                                     [&](int64_t i, int32_t v) { static_cast<int32_t*>(d)[i] = v; }));
      break;
    case DataType::kFloat16:
    case DataType::kBFloat16:  // bits stored in int32_data
      SRT_RETURN_IF_ERROR(copy_typed(p.int32_data(), numel, what, [&](int64_t i, int32_t v) {
        static_cast<uint16_t*>(d)[i] = static_cast<uint16_t>(v);
      }));
      break;
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kBool:
      SRT_RETURN_IF_ERROR(copy_typed(p.int32_data(), numel, what, [&](int64_t i, int32_t v) {
        static_cast<uint8_t*>(d)[i] = static_cast<uint8_t>(dtype == DataType::kBool ? v != 0 : v);
      }));
      break;
    case DataType::kInt16:
    case DataType::kUInt16:  // int32_data, like the 8-bit types
      SRT_RETURN_IF_ERROR(copy_typed(p.int32_data(), numel, what, [&](int64_t i, int32_t v) {
        static_cast<uint16_t*>(d)[i] = static_cast<uint16_t>(v);
      }));
      break;
    case DataType::kFloat64:
      SRT_RETURN_IF_ERROR(copy_typed(p.double_data(), numel, what,
                                     [&](int64_t i, double v) { static_cast<double*>(d)[i] = v; }));
      break;
    case DataType::kUInt32:  // uint64_data holds uint32 and uint64
      SRT_RETURN_IF_ERROR(copy_typed(p.uint64_data(), numel, what, [&](int64_t i, uint64_t v) {
        static_cast<uint32_t*>(d)[i] = static_cast<uint32_t>(v);
      }));
      break;
    case DataType::kUInt64:
      SRT_RETURN_IF_ERROR(copy_typed(p.uint64_data(), numel, what,
                                     [&](int64_t i, uint64_t v) { static_cast<uint64_t*>(d)[i] = v; }));
      break;
    default: return internal_error(what + ": unhandled dtype");
  }
  return t;
}

Result<Tensor> load_tensor_pb(const std::string& path, std::string* name) {
  // protobuf parses at most 2 GiB; a larger file is refused before it is read.
  SRT_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path, INT_MAX));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return invalid_argument("'" + path + "' is not a TensorProto");
  if (name) *name = proto.name();
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  return tensor_from_proto(proto, dir);
}

namespace {

Result<HostTensor> host_tensor(const onnx::TensorProto& proto, const std::string& dir) {
  SRT_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(proto, dir));
  const auto* p = static_cast<const uint8_t*>(t.data());
  return HostTensor{t.dtype(), t.dims(), std::vector<uint8_t>(p, p + t.nbytes())};
}

Status add_tensors(const onnx::SequenceProto& seq, const std::string& dir, const std::string& path, SequenceValue* out) {
  if (seq.elem_type() != onnx::SequenceProto::TENSOR && seq.tensor_values_size() == 0 && seq.elem_type() != 0)
    return unsupported("'" + path + "': a sequence of something other than tensors");
  for (const auto& tp : seq.tensor_values()) {
    SRT_ASSIGN_OR_RETURN(HostTensor h, host_tensor(tp, dir));
    out->tensors.push_back(std::move(h));
  }
  return ok_status();
}

}  // namespace

Result<SequenceValue> load_sequence_pb(const std::string& path, ValueKind kind, DataType elem_dtype) {
  SRT_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path, INT_MAX));
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  SequenceValue v;
  v.kind = kind;
  v.elem_dtype = elem_dtype;
  if (kind == ValueKind::kSequence) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromString(bytes)) return invalid_argument("'" + path + "' is not a SequenceProto");
    SRT_RETURN_IF_ERROR(add_tensors(seq, dir, path, &v));
    return v;
  }
  onnx::OptionalProto opt;
  if (!opt.ParseFromString(bytes)) return invalid_argument("'" + path + "' is not an OptionalProto");
  if (kind == ValueKind::kOptionalTensor) {
    v.has_value = opt.has_tensor_value();
    if (v.has_value) {
      SRT_ASSIGN_OR_RETURN(HostTensor h, host_tensor(opt.tensor_value(), dir));
      v.tensors.push_back(std::move(h));
    }
    return v;
  }
  v.has_value = opt.has_sequence_value();
  if (v.has_value) SRT_RETURN_IF_ERROR(add_tensors(opt.sequence_value(), dir, path, &v));
  return v;
}

Status save_tensor_pb(const Tensor& t, const std::string& name, const std::string& path) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.dims()) proto.add_dims(d);
  proto.set_raw_data(t.data(), t.nbytes());
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) return invalid_argument("cannot write '" + path + "': tensor too large");
  return write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace streamrt::onnx_import
