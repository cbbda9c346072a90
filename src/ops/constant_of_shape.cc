// ConstantOfShape (opset 9): a tensor of the shape given by the int64 1-D input, filled with the
// one element of the `value` attribute (default: float32 0), whose type it takes.
#include "ops/constant_of_shape.h"

#include <cstring>

#include "ops/common.h"

namespace streamrt::ops {
namespace {

Result<Dims> shape_from(const ir::Node& node, const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v < 0) return node.error(StatusCode::kInvalidModel, "shape " + dims_to_string(values) + " has a negative dim");
  return Dims(values);
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 'input' (the shape)");
  if (ctx.input_dtype(0) != DataType::kInt64)
    return ctx.error(std::string("shape input must be int64, got ") + dtype_name(ctx.input_dtype(0)));
  const TensorInfo& in = ctx.input(0);
  if (in.has_shape && in.dims.size() != 1)
    return ctx.error("shape input must be 1-D, got shape " + dims_to_string(in.dims));
  SRT_ASSIGN_OR_RETURN(Tensor value, fill_value(ctx.node()));
  const DataType t = value.dtype();
  if (const Tensor* v = ctx.input_value(0)) {
    SRT_ASSIGN_OR_RETURN(auto values, v->to_int64_vector());
    SRT_ASSIGN_OR_RETURN(Dims dims, shape_from(ctx.node(), values));
    ctx.set_output(0, t, dims);
  } else if (in.has_shape && in.dims[0] >= 0) {
    ctx.set_output(0, t, Dims(static_cast<size_t>(in.dims[0]), kDynamicDim));
  } else {
    ctx.set_output_unranked(0, t);
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 'input' (the shape)");
  SRT_ASSIGN_OR_RETURN(Tensor value, fill_value(ctx.node()));
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(Dims dims, shape_from(ctx.node(), read_int_values(ctx.input(0))));
  if (y.dims != dims || y.dtype != value.dtype())
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the requested shape " + dims_to_string(dims));
  const size_t es = dtype_size(y.dtype);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t i = 0, n = y.numel(); i < n; ++i) std::memcpy(dst + i * es, value.data(), es);
  return ok_status();
}

}  // namespace

Result<Tensor> fill_value(const ir::Node& node) {
  if (!node.has_attr("value")) return Tensor::from_vector(DataType::kFloat32, {}, std::vector<float>{0.f});
  SRT_ASSIGN_OR_RETURN(Tensor t, node.attr_tensor("value"));
  if (t.empty()) return node.error(StatusCode::kInvalidModel, "attribute 'value' has no data type");
  if (t.numel() != 1)
    return node.error(StatusCode::kInvalidModel,
                      "attribute 'value' must hold one element, got shape " + dims_to_string(t.dims()));
  return t;
}

STREAMRT_REGISTER_OP(ConstantOfShape,
                     {.op_type = "ConstantOfShape", .min_opset = 9, .infer = infer, .cpu = cpu, .shape_inputs = {0},
                      .cpu_dtypes = kAnyDType, .dtype_input = -1,
                      .output_value_attr = "value", .output_value_defaults_to_float_zero = true});

}  // namespace streamrt::ops
