#include "streamrt/types.h"

#include <charconv>

namespace streamrt {

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat16: return 2;
    case DataType::kBFloat16: return 2;
    case DataType::kInt64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt8: return 1;
    case DataType::kUInt8: return 1;
    case DataType::kBool: return 1;
    case DataType::kFloat64: return 8;
    case DataType::kInt16: return 2;
    case DataType::kUInt16: return 2;
    case DataType::kUInt32: return 4;
    case DataType::kUInt64: return 8;
    case DataType::kUndefined: return 0;
  }
  return 0;
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt64: return "int64";
    case DataType::kInt32: return "int32";
    case DataType::kInt8: return "int8";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    case DataType::kFloat64: return "float64";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kUndefined: return "undefined";
  }
  return "undefined";
}

Result<DataType> parse_dtype(const std::string& name) {
  for (int i = 1; i <= static_cast<int>(kLastDataType); ++i) {
    auto t = static_cast<DataType>(i);
    if (name == dtype_name(t)) return t;
  }
  return invalid_argument("unknown data type '" + name + "'");
}

bool is_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

bool is_floating_point(DataType t) { return is_float(t) || t == DataType::kFloat64; }

bool is_unsigned(DataType t) {
  return t == DataType::kUInt8 || t == DataType::kUInt16 || t == DataType::kUInt32 ||
         t == DataType::kUInt64;
}

bool is_integer(DataType t) {
  return t == DataType::kInt64 || t == DataType::kInt32 || t == DataType::kInt16 ||
         t == DataType::kInt8 || is_unsigned(t);
}

bool is_valid_dtype(int raw) {
  return raw >= static_cast<int>(DataType::kFloat32) && raw <= static_cast<int>(kLastDataType);
}

bool dims_static(const Dims& d) {
  for (int64_t v : d)
    if (v < 0) return false;
  return true;
}

int64_t dims_numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

Result<int64_t> checked_numel(const Dims& d, int64_t limit) {
  int64_t n = 1;
  for (int64_t v : d) {
    if (v < 0) return invalid_argument("dims " + dims_to_string(d) + " are not static");
    if (v != 0 && n > limit / v)
      return invalid_argument("dims " + dims_to_string(d) + " hold too many elements");
    n *= v;
  }
  return n;
}

std::string dims_to_string(const Dims& d) {
  if (d.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += 'x';
    s += d[i] < 0 ? std::string("?") : std::to_string(d[i]);
  }
  return s;
}

Result<Dims> parse_dims(const std::string& s) {
  Dims out;
  if (s.empty()) return out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('x', pos);
    if (end == std::string::npos) end = s.size();
    std::string tok = s.substr(pos, end - pos);
    if (tok == "?" || tok == "-1") {
      out.push_back(kDynamicDim);
    } else {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (tok.empty() || ec != std::errc() || p != tok.data() + tok.size() || v < 0)
        return invalid_argument("bad dimension '" + tok + "' in '" + s + "'");
      out.push_back(v);
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace streamrt

namespace streamrt {

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kTensor: return "tensor";
    case ValueKind::kSequence: return "sequence";
    case ValueKind::kOptionalTensor: return "optional tensor";
    case ValueKind::kOptionalSequence: return "optional sequence";
  }
  return "unknown kind";
}

const char* device_type_name(DeviceType d) { return d == DeviceType::kCuda ? "cuda" : "cpu"; }

Result<DeviceType> parse_device_type(const std::string& s) {
  if (s == "cpu") return DeviceType::kCpu;
  if (s == "cuda") return DeviceType::kCuda;
  return invalid_argument("unknown device '" + s + "' (expected cpu or cuda)");
}

}  // namespace streamrt
