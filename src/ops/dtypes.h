// Sets of data types: DTypeSet, the families that dispatch<>() and require_input() take, and
// DTypeMask, one bit per DataType, what an op's registration lists for its CPU kernel
// (OpSchema::cpu_dtypes) and a CUDA kernel's for itself (cuda_kernel_registry.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "streamrt/types.h"

namespace streamrt::ops {

// Sets of data types for dispatch<>() and require_input(). kFloats is the family that
// computes in float (see is_float()); an op that also does float64 in double lists kFloat64.
enum DTypeSet : unsigned {
  kFloats = 1u << 0,      // float32, float16, bfloat16
  kSignedInts = 1u << 1,  // int64, int32, int16, int8
  kUnsigned = 1u << 2,    // uint8, uint16, uint32, uint64
  kBools = 1u << 3,
  kFloat64 = 1u << 4,     // double
  kAllFloats = kFloats | kFloat64,
  kInts = kSignedInts | kUnsigned,
  kNumeric = kAllFloats | kInts,
  kAll = kNumeric | kBools,
};

// The DTypeSet bit that holds `t` (0 for kUndefined).
inline unsigned dtype_set_of(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat16: case DataType::kBFloat16: return kFloats;
    case DataType::kFloat64: return kFloat64;
    case DataType::kInt64: case DataType::kInt32: case DataType::kInt16: case DataType::kInt8: return kSignedInts;
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64: return kUnsigned;
    case DataType::kBool: return kBools;
    default: return 0;
  }
}

// One bit per DataType value (bit t for DataType t).
using DTypeMask = uint32_t;
constexpr DTypeMask dtype_bit(DataType t) { return DTypeMask{1} << static_cast<unsigned>(t); }
constexpr bool has_dtype(DTypeMask m, DataType t) { return t != DataType::kUndefined && (m & dtype_bit(t)) != 0; }
// The listed types.
constexpr DTypeMask dtype_mask(std::initializer_list<DataType> types) {
  DTypeMask m = 0;
  for (DataType t : types) m |= dtype_bit(t);
  return m;
}
// The types of the DTypeSet families in `set`: what dispatch<set> takes.
constexpr DTypeMask dtypes(unsigned set) {
  DTypeMask m = 0;
  if (set & kFloats) m |= dtype_mask({DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16});
  if (set & kFloat64) m |= dtype_bit(DataType::kFloat64);
  if (set & kSignedInts) m |= dtype_mask({DataType::kInt64, DataType::kInt32, DataType::kInt16, DataType::kInt8});
  if (set & kUnsigned) m |= dtype_mask({DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64});
  if (set & kBools) m |= dtype_bit(DataType::kBool);
  return m;
}
// Every data type.
inline constexpr DTypeMask kAnyDType = dtypes(kAll);

// The type names in `m`, floats first, joined by `sep` ("float32, float16, ...").
std::string dtype_mask_names(DTypeMask m, const char* sep = ", ");

}  // namespace streamrt::ops
