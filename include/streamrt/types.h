// Element types and tensor dimensions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "streamrt/status.h"

namespace streamrt {

// Numbering is part of the plan format: never renumber, only append.
enum class DataType : uint8_t {
  kUndefined = 0,
  kFloat32 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kInt64 = 4,
  kInt32 = 5,
  kInt8 = 6,
  kUInt8 = 7,
  kBool = 8,
  kFloat64 = 9,
  kInt16 = 10,
  kUInt16 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
};
// The highest value in use (is_valid_dtype's bound); move it when appending.
inline constexpr DataType kLastDataType = DataType::kUInt64;

// What a model value holds: a tensor, or one of ONNX's sequence / optional types (a list of
// tensors of one element type; an optional tensor or sequence that may hold nothing). Numbering
// is part of the plan format: never renumber, only append.
enum class ValueKind : uint8_t {
  kTensor = 0,
  kSequence = 1,          // seq(tensor(T))
  kOptionalTensor = 2,    // optional(tensor(T))
  kOptionalSequence = 3,  // optional(seq(tensor(T)))
};
inline constexpr ValueKind kLastValueKind = ValueKind::kOptionalSequence;
// "tensor", "sequence", "optional tensor", "optional sequence".
const char* value_kind_name(ValueKind k);

// Bytes per element (0 for kUndefined).
size_t dtype_size(DataType t);
// "float32", "float16", ... ; "undefined" for kUndefined.
const char* dtype_name(DataType t);
// Parses a dtype_name() string.
Result<DataType> parse_dtype(const std::string& name);
// The float family that computes in float (GEMM, conv, norms, fusions): float32, float16,
// bfloat16. float64 is deliberately not in it: kernels written for this family compute in
// float and would silently lose float64's precision.
bool is_float(DataType t);
bool is_floating_point(DataType t);  // is_float() or float64
// int64, int32, int16, int8 and uint8, uint16, uint32, uint64 (not bool).
bool is_integer(DataType t);
bool is_unsigned(DataType t);  // uint8, uint16, uint32, uint64
// True for values that fit the enum (used when reading untrusted files).
bool is_valid_dtype(int raw);

// Dimensions; -1 (kDynamicDim) marks a dimension known only at run time.
using Dims = std::vector<int64_t>;
inline constexpr int64_t kDynamicDim = -1;

// True when no dimension is dynamic.
bool dims_static(const Dims& d);
// Product of dims; 1 for a scalar. Requires static, non-negative dims.
int64_t dims_numel(const Dims& d);
// Product of dims, or an error on dynamic dims or overflow past `limit`.
Result<int64_t> checked_numel(const Dims& d, int64_t limit = INT64_MAX);
// "1x3x224x224" (dynamic as "?"), "scalar" for rank 0.
std::string dims_to_string(const Dims& d);
// Parses "1x3x224x224"; "?" or "-1" is dynamic. Empty string is a scalar.
Result<Dims> parse_dims(const std::string& s);

// Where an engine runs.
enum class DeviceType : uint8_t { kCpu = 0, kCuda = 1 };
const char* device_type_name(DeviceType d);                 // "cpu" | "cuda"
Result<DeviceType> parse_device_type(const std::string& s);  // "cpu" | "cuda"; kInvalidArgument otherwise

}  // namespace streamrt
