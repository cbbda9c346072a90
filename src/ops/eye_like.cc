// EyeLike (opsets 9, 22): a 2-D tensor of the input's shape with ones on the k-th diagonal
// (output[i][j] = 1 where j - i == k; k > 0 above the main diagonal) and zeros elsewhere. Type:
// attribute `dtype` or the input's. Only the input's shape is read.
#include "ops/eye_like.h"

#include <algorithm>
#include <cstring>

#include "onnx/tensor_proto.h"
#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<DataType> eye_like_dtype(const ir::Node& node, DataType input) {
  if (!node.has_attr("dtype")) return input;
  SRT_ASSIGN_OR_RETURN(int64_t t, node.attr_int("dtype"));
  if (t < 0 || t > INT32_MAX)
    return node.error(StatusCode::kInvalidModel, "attribute 'dtype' = " + std::to_string(t) + " is not a data type");
  return onnx_import::dtype_from_onnx(static_cast<int>(t), node.describe() + " attribute 'dtype'");
}

Result<uint64_t> one_bits(const ir::Node& node, DataType t) {
  uint64_t bits = 0;
  SRT_RETURN_IF_ERROR(dispatch<kAll>(t, node.describe(), [&]<typename T>() {
    const T one = store<T>(compute_t<T>(1));
    std::memcpy(&bits, &one, sizeof(T));
    return ok_status();
  }));
  return bits;
}

Result<int64_t> eye_like_k(const ir::Node& node, int64_t rows, int64_t cols) {
  SRT_ASSIGN_OR_RETURN(int64_t k, node.attr_int("k", 0));
  return std::clamp<int64_t>(k, -rows, cols);
}

namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  SRT_ASSIGN_OR_RETURN(DataType t, eye_like_dtype(ctx.node(), ctx.input_dtype(0)));
  SRT_RETURN_IF_ERROR(one_bits(ctx.node(), t).status());
  SRT_RETURN_IF_ERROR(ctx.node().attr_int("k", 0).status());
  const TensorInfo& x = ctx.input(0);
  if (x.has_shape && x.dims.size() != 2)
    return ctx.error("input must be 2-D, got shape " + dims_to_string(x.dims));
  if (x.has_shape) ctx.set_output(0, t, x.dims);
  else ctx.set_output(0, t, {kDynamicDim, kDynamicDim});
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (x.dims.size() != 2) return ctx.error("input must be 2-D, got shape " + dims_to_string(x.dims));
  SRT_ASSIGN_OR_RETURN(DataType t, eye_like_dtype(ctx.node(), x.dtype));
  SRT_ASSIGN_OR_RETURN(uint64_t one, one_bits(ctx.node(), t));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, t, x.dims));
  const int64_t rows = x.dims[0], cols = x.dims[1];
  SRT_ASSIGN_OR_RETURN(int64_t k, eye_like_k(ctx.node(), rows, cols));
  const size_t es = dtype_size(t);
  char* dst = static_cast<char*>(y.data);
  if (y.nbytes() > 0) std::memset(dst, 0, y.nbytes());
  for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i)
    std::memcpy(dst + static_cast<size_t>(i * cols + i + k) * es, &one, es);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(EyeLike, {.op_type = "EyeLike", .min_opset = 9, .infer = infer, .cpu = cpu,
                               .cpu_dtypes = kAnyDType, .output_dtype_attr = "dtype"});

}  // namespace streamrt::ops
