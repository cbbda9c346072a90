// HannWindow, HammingWindow, BlackmanWindow (opset 17): a 1-D window of `size` points (a scalar
// int32 / int64 input, read as a shape input since it decides the output shape), periodic
// (attribute periodic = 1, default: the first `size` points of a size + 1 symmetric window) or
// symmetric, of type output_datatype (an ONNX type number, default float32). The formula is in
// signal_windows.h, shared with the CUDA kernel.
#include "ops/signal_windows.h"

#include "onnx/tensor_proto.h"
#include "ops/common.h"

namespace streamrt::ops::signal_window {

// Far beyond any real window; keeps a hostile size from asking for terabytes.
constexpr int64_t kMaxWindowLength = int64_t{1} << 40;

Result<Kind> kind_of(const ir::Node& node) {
  if (node.op_type == "HannWindow") return Kind::kHann;
  if (node.op_type == "HammingWindow") return Kind::kHamming;
  if (node.op_type == "BlackmanWindow") return Kind::kBlackman;
  return node.error(StatusCode::kUnsupported, "not a window op");
}

Result<int64_t> window_length(const ir::Node& node, DataType t, const void* size) {
  int64_t n = 0;
  if (t == DataType::kInt64) n = *static_cast<const int64_t*>(size);
  else if (t == DataType::kInt32) n = *static_cast<const int32_t*>(size);
  else return node.error(StatusCode::kInvalidModel, std::string("size must be int32 or int64, got ") + dtype_name(t));
  if (n < 0 || n > kMaxWindowLength)
    return node.error(StatusCode::kInvalidArgument, "size " + std::to_string(n) + " is negative or too large");
  return n;
}

Result<DataType> output_dtype(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t t, node.attr_int("output_datatype", 1));
  auto dt = onnx_import::dtype_from_onnx(static_cast<int>(t), node.describe() + " output_datatype");
  if (!dt.ok()) return node.error(StatusCode::kUnsupported, dt.status().message());
  if (*dt == DataType::kBool)
    return node.error(StatusCode::kInvalidModel, "output_datatype bool is not a numeric type");
  return *dt;
}

namespace {

Status check_size_input(const ir::Node& node, const TensorInfo& in) {
  if (in.dtype != DataType::kInt32 && in.dtype != DataType::kInt64)
    return node.error(StatusCode::kInvalidModel,
                      std::string("size must be int32 or int64, got ") + dtype_name(in.dtype));
  if (in.has_shape && dims_numel(in.dims) > 1)
    return node.error(StatusCode::kInvalidModel, "size must be a scalar, got shape " + dims_to_string(in.dims));
  return ok_status();
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 'size'");
  SRT_RETURN_IF_ERROR(check_size_input(ctx.node(), ctx.input(0)));
  SRT_RETURN_IF_ERROR(kind_of(ctx.node()).status());
  SRT_ASSIGN_OR_RETURN(DataType out, output_dtype(ctx.node()));
  const Tensor* v = ctx.input_value(0);
  if (!v) {
    ctx.set_output(0, out, {kDynamicDim});
    return ok_status();
  }
  if (v->numel() != 1) return ctx.error("size must hold one value");
  auto n = window_length(ctx.node(), v->dtype(), v->data());
  if (!n.ok()) return ctx.error(n.status().message());
  ctx.set_output(0, out, {*n});
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  if (!ctx.has_input(0) || ctx.input(0).numel() != 1) return ctx.error("size must be a scalar");
  SRT_ASSIGN_OR_RETURN(Kind kind, kind_of(ctx.node()));
  SRT_ASSIGN_OR_RETURN(DataType out, output_dtype(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t n, window_length(ctx.node(), ctx.input(0).dtype, ctx.input(0).data));
  SRT_ASSIGN_OR_RETURN(int64_t periodic, ctx.node().attr_int("periodic", 1));
  const TensorRef& y = ctx.output(0);
  if (y.dims != Dims{n} || y.dtype != out)
    return ctx.error("output " + dims_to_string(y.dims) + " does not match the window length " + std::to_string(n));
  const double denom = static_cast<double>(periodic != 0 ? n : n - 1);
  return dispatch<kNumeric>(out, ctx.node().describe(), [&]<typename T>() {
    T* py = y.as<T>();
    for (int64_t i = 0; i < n; ++i) py[i] = store<T>(static_cast<compute_t<T>>(value(kind, i, denom)));
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(HannWindow, {.op_type = "HannWindow", .min_opset = 17, .infer = infer, .cpu = cpu,
                                  .shape_inputs = {0}, .cpu_dtypes = dtypes(kNumeric), .dtype_input = -1,
                                  .output_dtype_attr = "output_datatype"});
STREAMRT_REGISTER_OP(HammingWindow, {.op_type = "HammingWindow", .min_opset = 17, .infer = infer, .cpu = cpu,
                                     .shape_inputs = {0}, .cpu_dtypes = dtypes(kNumeric), .dtype_input = -1,
                                     .output_dtype_attr = "output_datatype"});
STREAMRT_REGISTER_OP(BlackmanWindow, {.op_type = "BlackmanWindow", .min_opset = 17, .infer = infer,
                                      .cpu = cpu, .shape_inputs = {0}, .cpu_dtypes = dtypes(kNumeric),
                                      .dtype_input = -1, .output_dtype_attr = "output_datatype"});

}  // namespace streamrt::ops::signal_window
