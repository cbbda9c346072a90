// Helpers for the compute-op tests (Gemm, MatMul, Conv, pooling, BatchNormalization): random
// inputs, half-precision tensors, tolerant comparison, and running shape inference alone.
#pragma once

#include <cmath>
#include <random>

#include "core/float16.h"
#include "op_test_util.h"

namespace streamrt::testing {

// Uniform values in [-1, 1), reproducible per seed.
inline std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

inline int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// Tensor of `dtype` (float32 / float16 / bfloat16) holding `v` rounded to that type.
// Zero-element tensors are allocated rather than copied from an empty vector.
inline Tensor float_tensor(DataType dtype, const Dims& dims, const std::vector<float>& v) {
  if (v.empty()) return Tensor::allocate(dtype, dims).value();
  if (dtype == DataType::kFloat32) return f32(dims, v);
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = dtype == DataType::kFloat16 ? Half::from_float(v[i]) : BFloat16::from_float(v[i]);
  return Tensor::from_vector(dtype, dims, bits);
}

// `v` rounded through `dtype` and back (what the kernel actually sees).
inline std::vector<float> rounded(DataType dtype, const std::vector<float>& v) {
  return values_f32(float_tensor(dtype, {static_cast<int64_t>(v.size())}, v));
}

// Per-dtype tolerances of the project's conformance harness (DESIGN.md "Testing").
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         DataType dtype = DataType::kFloat32) {
  double rtol = 1e-4, atol = 1e-5;
  if (dtype == DataType::kFloat16) rtol = 1e-3, atol = 2.5e-3;
  if (dtype == DataType::kBFloat16) rtol = 1e-2, atol = 2e-2;
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && reported++ < 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// Runs only the shape rule. Inputs with `ranked == false` have unknown rank.
struct InInfo {
  DataType dtype;
  Dims dims;
  bool ranked = true;
};
inline Result<std::vector<ops::TensorInfo>> infer_only(const ir::Node& node, const std::vector<InInfo>& ins) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type);
  if (!schema) return not_found("no op " + node.op_type);
  std::vector<ops::TensorInfo> infos;
  for (const auto& i : ins) infos.push_back(ops::TensorInfo{i.dtype, i.dims, i.ranked, nullptr});
  ops::InferContext ctx(node, infos, node.outputs.size());
  SRT_RETURN_IF_ERROR(schema->infer(ctx));
  return ctx.outputs();
}

inline ir::Attribute ints(std::vector<int64_t> v) { return ir::Attribute::make_ints(std::move(v)); }
inline ir::Attribute int_attr(int64_t v) { return ir::Attribute::make_int(v); }
inline ir::Attribute float_attr(float v) { return ir::Attribute::make_float(v); }
inline ir::Attribute str(std::string v) { return ir::Attribute::make_string(std::move(v)); }

}  // namespace streamrt::testing
