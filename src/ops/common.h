// Helpers shared by op files: broadcasting, dtype dispatch, axis normalization.
#pragma once

#include <array>
#include <cmath>
#include <type_traits>

#include "core/float16.h"
#include "ops/op.h"

namespace streamrt::ops {

// numpy-style broadcast of two shapes; dynamic dims (-1) stay dynamic unless the other is >1.
Result<Dims> broadcast_dims(const Dims& a, const Dims& b);
// Broadcast of several shapes.
Result<Dims> broadcast_all(const std::vector<Dims>& shapes);

// Strides (in elements) of `in` viewed as broadcast to `out`: 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out);

// Calls fn(out_index, in_offsets[k]) for every element of `out`, where in_offsets[k] is the
// element offset into input k (shapes broadcast to out). Inner loop kept simple and tight.
template <size_t N, typename Fn>
void for_each_broadcast(const Dims& out, const std::array<Dims, N>& ins, Fn&& fn) {
  const size_t rank = out.size();
  const int64_t total = dims_numel(out);
  if (total == 0) return;
  std::array<std::vector<int64_t>, N> strides;
  bool same = true;
  for (size_t k = 0; k < N; ++k) {
    strides[k] = broadcast_strides(ins[k], out);
    same = same && ins[k] == out;
  }
  std::array<int64_t, N> off{};
  if (same) {
    for (int64_t i = 0; i < total; ++i) {
      off.fill(i);
      fn(i, off);
    }
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// Arithmetic type for storage type T: float for Half / BFloat16, T otherwise (double stays
// double: float64 math is done in double).
template <typename T> struct ComputeType { using type = T; };
template <> struct ComputeType<Half> { using type = float; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <typename T> using compute_t = typename ComputeType<T>::type;

template <typename T> inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(v);
  else return v;
}
template <typename T> inline T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(v);
  else return v;
}

// DTypeSet (kFloats, kSignedInts, ...) and dtype_set_of(): ops/dtypes.h.

// Calls f.template operator()<T>() with the C++ storage type for `t` (bool for kBool, Half /
// BFloat16 for the half types, double for float64). Types outside `Allowed` give kUnsupported
// naming `what`; they are not even instantiated.
template <unsigned Allowed, typename F>
Status dispatch(DataType t, const std::string& what, F&& f) {
  switch (t) {
    case DataType::kFloat32: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<float>(); break;
    case DataType::kFloat16: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<Half>(); break;
    case DataType::kBFloat16: if constexpr ((Allowed & kFloats) != 0) return f.template operator()<BFloat16>(); break;
    case DataType::kFloat64: if constexpr ((Allowed & kFloat64) != 0) return f.template operator()<double>(); break;
    case DataType::kInt64: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int64_t>(); break;
    case DataType::kInt32: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int32_t>(); break;
    case DataType::kInt16: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int16_t>(); break;
    case DataType::kInt8: if constexpr ((Allowed & kSignedInts) != 0) return f.template operator()<int8_t>(); break;
    case DataType::kUInt8: if constexpr ((Allowed & kUnsigned) != 0) return f.template operator()<uint8_t>(); break;
    case DataType::kUInt16: if constexpr ((Allowed & kUnsigned) != 0) return f.template operator()<uint16_t>(); break;
    case DataType::kUInt32: if constexpr ((Allowed & kUnsigned) != 0) return f.template operator()<uint32_t>(); break;
    case DataType::kUInt64: if constexpr ((Allowed & kUnsigned) != 0) return f.template operator()<uint64_t>(); break;
    case DataType::kBool: if constexpr ((Allowed & kBools) != 0) return f.template operator()<bool>(); break;
    default: break;
  }
  return unsupported(what + ": data type " + dtype_name(t) + " is not supported");
}

// Normalizes a possibly negative axis into [0, rank); error names the node.
Result<int64_t> normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank);
Result<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);

// Reads an optional int64 list input (e.g. axes) or the attribute of the same meaning in
// older opsets. Returns nullopt when neither is present.
Result<std::optional<std::vector<int64_t>>> int_list_input_or_attr(const InferContext& ctx,
                                                                   size_t input_index,
                                                                   const std::string& attr);
// Kernel-side twin of the above (inputs are host tensors on the CPU).
Result<std::optional<std::vector<int64_t>>> int_list_input_or_attr(const KernelContext& ctx,
                                                                   size_t input_index,
                                                                   const std::string& attr);
// Reads a host integer tensor as int64 values.
std::vector<int64_t> read_int_values(const TensorRef& t);

// Checks that input `i` exists and has dtype among `allowed` (DTypeSet bits).
Status require_input(const InferContext& ctx, size_t i, unsigned allowed);

}  // namespace streamrt::ops
