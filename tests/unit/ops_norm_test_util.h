// Extra helpers for the tests of the normalization / reduction / generator ops:
// shape inference through the schema with partial knowledge, half-type tensors, tolerances.
#pragma once

#include <cmath>

#include "core/float16.h"
#include "op_test_util.h"

namespace streamrt::testing {

// What inference knows about an input: dtype and dims (-1 dynamic); optionally its value.
inline ops::TensorInfo known(DataType t, const Dims& dims, const Tensor* value = nullptr) {
  return ops::TensorInfo{t, dims, true, value};
}
inline ops::TensorInfo unranked(DataType t) { return ops::TensorInfo{t, {}, false, nullptr}; }
inline ops::TensorInfo value_of(const Tensor& t) { return known(t.dtype(), t.dims(), &t); }

// Runs the registered infer() of node.op_type on `inputs`; returns the output infos.
inline Result<std::vector<ops::TensorInfo>> infer_infos(const ir::Node& node,
                                                        std::vector<ops::TensorInfo> inputs) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type, node.domain);
  if (!schema) return not_found("no schema for " + node.op_type);
  ops::InferContext ctx(node, std::move(inputs), node.outputs.size());
  Status st = schema->infer(ctx);
  if (!st.ok()) return st;
  return ctx.outputs();
}

// Runs the node on the CPU and returns the status (for error-path tests).
inline Status run_status(const ir::Node& node, const std::vector<Tensor>& inputs) {
  auto r = ops::evaluate_on_host(node, inputs);
  return r.ok() ? ok_status() : r.status();
}

inline Tensor i32(const Dims& dims, const std::vector<int32_t>& v) {
  return Tensor::from_vector(DataType::kInt32, dims, v);
}
inline Tensor f16(const Dims& dims, const std::vector<float>& v) {
  std::vector<Half> h;
  for (float f : v) h.push_back(Half(f));
  return Tensor::from_vector(DataType::kFloat16, dims, h);
}
inline Tensor bf16(const Dims& dims, const std::vector<float>& v) {
  std::vector<BFloat16> h;
  for (float f : v) h.push_back(BFloat16(f));
  return Tensor::from_vector(DataType::kBFloat16, dims, h);
}
inline Tensor u8(const Dims& dims, const std::vector<uint8_t>& v) {
  return Tensor::from_vector(DataType::kUInt8, dims, v);
}

inline ir::Attribute attr_i(int64_t v) { return ir::Attribute::make_int(v); }
inline ir::Attribute attr_f(float v) { return ir::Attribute::make_float(v); }
inline ir::Attribute attr_is(std::vector<int64_t> v) { return ir::Attribute::make_ints(std::move(v)); }

// Element-wise |a - b| <= atol + rtol * |b| (NaN only matches NaN).
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                         double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(static_cast<double>(got[i]), want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << "at " << i;
    }
  }
}

}  // namespace streamrt::testing
