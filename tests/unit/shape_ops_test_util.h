// Helpers for the data-movement op tests: tensors of every dtype, byte-exact comparison
// against an independently computed index map, and direct calls of a schema's infer().
#pragma once

#include <cstring>
#include <optional>

#include "core/float16.h"
#include "op_test_util.h"

namespace streamrt::testing {

inline const std::vector<DataType> kAllDTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt64,
    DataType::kInt32,   DataType::kInt8,    DataType::kUInt8,    DataType::kBool};

inline Tensor i32(const Dims& dims, const std::vector<int32_t>& v) {
  return Tensor::from_vector(DataType::kInt32, dims, v);
}

// A tensor of `dt` whose elements are distinct where the type allows (bools: a fixed
// pseudo-random 0/1 pattern), so that a wrong element shows up in a byte comparison.
inline Tensor pattern(DataType dt, const Dims& dims) {
  Tensor t = Tensor::allocate(dt, dims).value();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = i % 120 + 1;  // exact in every type, bf16 included (< 256)
    void* p = t.mutable_data();
    switch (dt) {
      case DataType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v) + 0.5f; break;
      case DataType::kFloat16: static_cast<Half*>(p)[i] = Half(static_cast<float>(v)); break;
      case DataType::kBFloat16: static_cast<BFloat16*>(p)[i] = BFloat16(static_cast<float>(v)); break;
      case DataType::kInt64: static_cast<int64_t*>(p)[i] = v * 1000000007LL; break;
      case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(-v * 1001); break;
      case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(-v); break;
      case DataType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v + 100); break;
      case DataType::kBool: static_cast<bool*>(p)[i] = ((i * 2654435761LL) >> 5) & 1; break;
      default: break;
    }
  }
  return t;
}

// Expects out[k] to be byte-identical to in[map[k]] for every k.
inline void expect_picked(const Tensor& out, const Tensor& in, const std::vector<int64_t>& map) {
  ASSERT_EQ(out.dtype(), in.dtype());
  ASSERT_EQ(out.numel(), static_cast<int64_t>(map.size()));
  const size_t es = dtype_size(in.dtype());
  const auto* po = static_cast<const unsigned char*>(out.data());
  const auto* pi = static_cast<const unsigned char*>(in.data());
  for (size_t k = 0; k < map.size(); ++k) {
    ASSERT_GE(map[k], 0);
    ASSERT_LT(map[k], in.numel());
    ASSERT_EQ(std::memcmp(po + k * es, pi + static_cast<size_t>(map[k]) * es, es), 0)
        << dtype_name(in.dtype()) << " element " << k << " should be input element " << map[k];
  }
}

// 0, 1, ..., n-1: the map of an op that keeps the element order.
inline std::vector<int64_t> iota_map(int64_t n) {
  std::vector<int64_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[static_cast<size_t>(i)] = i;
  return m;
}

// Multi-index of flat `i` in row-major `dims`, and back.
inline std::vector<int64_t> unravel(int64_t i, const Dims& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}
inline int64_t ravel(const std::vector<int64_t>& idx, const Dims& dims) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

// Runs the node on the CPU and returns only the Status (for error cases).
inline Status run_status(const ir::Node& node, const std::vector<Tensor>& inputs) {
  return ops::evaluate_on_host(node, inputs).status();
}

inline ops::TensorInfo info(DataType dt, Dims dims) { return ops::TensorInfo{dt, std::move(dims), true, nullptr}; }
inline ops::TensorInfo unranked(DataType dt) { return ops::TensorInfo{dt, {}, false, nullptr}; }
// Info of a tensor whose value is known (the tensor must outlive the call).
inline ops::TensorInfo known(const Tensor& t) { return ops::TensorInfo{t.dtype(), t.dims(), true, &t}; }
inline ops::TensorInfo absent() { return ops::TensorInfo{}; }

struct Inferred {
  Status status;
  std::vector<ops::TensorInfo> outs;
  std::vector<std::optional<Tensor>> values;
};

// Calls the registered schema's infer() directly, as the shape-inference driver does.
inline Inferred infer(const ir::Node& node, std::vector<ops::TensorInfo> ins) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type, node.domain);
  EXPECT_NE(schema, nullptr) << node.op_type;
  if (!schema) return {internal_error("no schema"), {}, {}};
  ops::InferContext ctx(node, std::move(ins), node.outputs.size());
  Inferred r;
  r.status = schema->infer(ctx);
  r.outs = ctx.outputs();
  r.values = std::move(ctx.output_values());
  return r;
}

// Attribute shorthands.
inline ir::Attribute ai(int64_t v) { return ir::Attribute::make_int(v); }
inline ir::Attribute ais(std::vector<int64_t> v) { return ir::Attribute::make_ints(std::move(v)); }

}  // namespace streamrt::testing
