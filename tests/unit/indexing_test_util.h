// Helpers for the index-driven op tests (GatherElements, GatherND, ScatterElements, ScatterND,
// OneHot, EyeLike, ReverseSequence): tensors of any dtype from plain numbers, index tensors of
// either index type, and direct calls of a schema's CPU kernel on hand-bound tensors.
#pragma once

#include "ops/common.h"
#include "shape_ops_test_util.h"

namespace streamrt::testing {

// A tensor of `dt` holding `v` converted to it (values exact in every type where tests need it).
inline Tensor typed(DataType dt, const Dims& dims, const std::vector<double>& v) {
  Tensor t = Tensor::allocate(dt, dims).value();
  Status st = ops::dispatch<ops::kAll>(dt, "typed", [&]<typename T>() {
    for (size_t i = 0; i < v.size(); ++i)
      t.mutable_data_as<T>()[i] = ops::store<T>(static_cast<ops::compute_t<T>>(v[i]));
    return ok_status();
  });
  EXPECT_TRUE(st.ok()) << st.to_string();
  return t;
}

// int64 (default) or int32 indices holding `v`.
inline Tensor index_tensor(const Dims& dims, const std::vector<int64_t>& v, bool int32 = false) {
  Tensor t = Tensor::allocate(int32 ? DataType::kInt32 : DataType::kInt64, dims).value();
  for (size_t i = 0; i < v.size(); ++i) {
    if (int32) t.mutable_data_as<int32_t>()[i] = static_cast<int32_t>(v[i]);
    else t.mutable_data_as<int64_t>()[i] = v[i];
  }
  return t;
}

// Runs the registered CPU kernel directly with `ins` and one output of `out_dt` / `out_dims`
// (as the runtime does when the indices were not known at build time), returning its Status.
inline Status run_kernel(const ir::Node& node, const std::vector<Tensor>& ins, DataType out_dt, const Dims& out_dims) {
  std::vector<ops::TensorRef> in_refs;
  for (const Tensor& t : ins) in_refs.push_back({t.dtype(), t.dims(), const_cast<void*>(t.data())});
  Tensor y = Tensor::allocate(out_dt, out_dims).value();
  std::vector<ops::TensorRef> outs = {{y.dtype(), y.dims(), y.mutable_data()}};
  ops::KernelContext kctx(node, in_refs, outs);
  return ops::OpRegistry::global().find(node.op_type)->cpu(kctx);
}

// Calls the schema's verify hook with these input infos.
inline Status run_verify(const ir::Node& node, std::vector<ops::TensorInfo> ins) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op_type);
  EXPECT_NE(schema, nullptr);
  EXPECT_NE(schema->verify, nullptr) << node.op_type;
  if (!schema || !schema->verify) return internal_error("no verify hook");
  ops::InferContext ctx(node, std::move(ins), node.outputs.size());
  return schema->verify(ctx);
}

}  // namespace streamrt::testing
