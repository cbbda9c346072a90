// Constant: a tensor from exactly one of the attributes value, value_float(s), value_int(s).
// The value is published at inference time so constant folding and shape computations see it.
#include "ops/constant.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<std::string> constant_value_key(const ir::Node& node) {
  static const char* const kKeys[] = {"value", "value_float", "value_floats", "value_int",
                                      "value_ints", "value_string", "value_strings", "sparse_value"};
  std::string key;
  for (const char* k : kKeys) {
    if (!node.has_attr(k)) continue;
    if (!key.empty()) return node.error(StatusCode::kInvalidModel, "has both '" + key + "' and '" + k + "'");
    key = k;
  }
  if (key.empty()) return node.error(StatusCode::kInvalidModel, "has no value attribute");
  return key;
}

namespace {

Result<Tensor> constant_value(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string key, constant_value_key(node));
  if (key == "value") return node.attr_tensor("value");
  if (key == "value_float") {
    SRT_ASSIGN_OR_RETURN(float f, node.attr_float(key));
    return tensor_of(DataType::kFloat32, {}, std::vector<float>{f});
  }
  if (key == "value_floats") {
    SRT_ASSIGN_OR_RETURN(auto v, node.attr_floats(key));
    return tensor_of(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
  }
  if (key == "value_int") {
    SRT_ASSIGN_OR_RETURN(int64_t i, node.attr_int(key));
    return tensor_of(DataType::kInt64, {}, std::vector<int64_t>{i});
  }
  if (key == "value_ints") {
    SRT_ASSIGN_OR_RETURN(auto v, node.attr_ints(key));
    return tensor_of(DataType::kInt64, {static_cast<int64_t>(v.size())}, v);
  }
  return node.error(StatusCode::kUnsupported, "attribute '" + key + "' is not supported");
}

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(Tensor t, constant_value(ctx.node()));
  if (t.empty()) return ctx.error("value tensor has no data type");
  if (!dims_static(t.dims())) return ctx.error("value tensor has dynamic dims " + dims_to_string(t.dims()));
  ctx.set_output(0, t.dtype(), t.dims());
  ctx.set_output_value(0, std::move(t));
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 0));
  SRT_ASSIGN_OR_RETURN(Tensor t, constant_value(ctx.node()));
  const TensorRef& y = ctx.output(0);
  if (t.dtype() != y.dtype || t.dims() != y.dims) return ctx.error("output does not match the value");
  if (t.nbytes()) std::memcpy(y.data, t.data(), t.nbytes());
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Constant, {.op_type = "Constant", .infer = infer, .cpu = cpu, .cpu_dtypes = kAnyDType,
                                .dtype_input = -1, .output_value_attr = "value"});

}  // namespace streamrt::ops
