// Extra helpers for the element-wise op tests: tensors of every dtype, running only the
// shape rule, expecting a failure code.
#pragma once

#include <cmath>

#include "core/float16.h"
#include "op_test_util.h"

namespace streamrt::testing {

inline Tensor f16(const Dims& dims, const std::vector<float>& v) {
  std::vector<Half> h;
  for (float x : v) h.emplace_back(x);
  return Tensor::from_vector(DataType::kFloat16, dims, h);
}
inline Tensor bf16(const Dims& dims, const std::vector<float>& v) {
  std::vector<BFloat16> h;
  for (float x : v) h.emplace_back(x);
  return Tensor::from_vector(DataType::kBFloat16, dims, h);
}
inline Tensor i32(const Dims& dims, const std::vector<int32_t>& v) {
  return Tensor::from_vector(DataType::kInt32, dims, v);
}
inline Tensor i8(const Dims& dims, const std::vector<int8_t>& v) {
  return Tensor::from_vector(DataType::kInt8, dims, v);
}
inline Tensor u8(const Dims& dims, const std::vector<uint8_t>& v) {
  return Tensor::from_vector(DataType::kUInt8, dims, v);
}
// Bool tensor from 0 / 1 bytes (std::vector<bool> is not contiguous).
inline Tensor boolean(const Dims& dims, const std::vector<uint8_t>& v) {
  return Tensor::from_vector(DataType::kBool, dims, v);
}
inline std::vector<uint8_t> values_bool(const Tensor& t) {
  const auto* p = t.data_as<uint8_t>();
  return std::vector<uint8_t>(p, p + t.numel());
}
template <typename T>
inline std::vector<T> values_as(const Tensor& t) {
  const auto* p = t.data_as<T>();
  return std::vector<T>(p, p + t.numel());
}

// Status of running the node (infer + kernel) on inputs.
inline Status run_status(const ir::Node& node, const std::vector<Tensor>& inputs) {
  auto r = ops::evaluate_on_host(node, inputs);
  return r.ok() ? ok_status() : r.status();
}

// Runs only the shape rule on the given input infos; returns the status and the outputs.
inline Result<std::vector<ops::TensorInfo>> infer_only(const ir::Node& node,
                                                       std::vector<ops::TensorInfo> inputs) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type, node.domain);
  if (!schema) return Status(StatusCode::kNotFound, "no op " + node.op_type);
  ops::InferContext ctx(node, std::move(inputs), node.outputs.size());
  SRT_RETURN_IF_ERROR(schema->infer(ctx));
  return ctx.outputs();
}
inline ops::TensorInfo info(DataType t, Dims d) { return ops::TensorInfo{t, std::move(d), true, nullptr}; }
inline ops::TensorInfo unranked(DataType t) { return ops::TensorInfo{t, {}, false, nullptr}; }

// Elementwise |a - b| <= atol + rtol * |b|, NaN matches NaN.
inline void expect_near_all(const std::vector<float>& got, const std::vector<float>& want,
                            float rtol, float atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::fabs(want[i])) << "at " << i;
  }
}

}  // namespace streamrt::testing
