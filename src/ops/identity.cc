// Identity and Dropout (inference only). Dropout's output is its input; the optional mask
// output is all ones (bool since opset 10, the input's type before). A Dropout whose
// training_mode input (opset 12) is true is kUnsupported: streamrt does not train.
#include <cstring>

#include "ops/elementwise_util.h"

namespace streamrt::ops {
namespace {

constexpr int kBoolMaskSince = 10;
constexpr int kRatioAsInputSince = 12;

Status identity_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

Status copy_input0(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  if (x.dtype != y.dtype || x.numel() != y.numel())
    return ctx.error("output " + std::string(dtype_name(y.dtype)) + " " + dims_to_string(y.dims) +
                     " does not match input " + dtype_name(x.dtype) + " " + dims_to_string(x.dims));
  // An empty tensor may have no buffer at all (null): memmove of null is undefined even for 0 bytes.
  if (x.data != y.data && x.nbytes() > 0) std::memmove(y.data, x.data, x.nbytes());
  return ok_status();
}

Status identity_cpu(KernelContext& ctx) { return copy_input0(ctx); }

const char* const kTrainingUnsupported = "training_mode = true is not supported (inference only)";

Status dropout_infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  if (ctx.opset() >= kRatioAsInputSince) {
    if (ctx.has_input(1)) SRT_RETURN_IF_ERROR(require_input(ctx, 1, kFloats));
    if (ctx.has_input(2)) {
      SRT_RETURN_IF_ERROR(require_input(ctx, 2, kBools));
      // Known now (a constant): refuse at build time. Otherwise the kernel checks.
      if (const Tensor* t = ctx.input_value(2)) {
        const auto* p = t->data_as<uint8_t>();
        for (int64_t i = 0; i < t->numel(); ++i)
          if (p[i] != 0) return ctx.unsupported(kTrainingUnsupported);
      }
    }
  } else {
    SRT_RETURN_IF_ERROR(ctx.node().attr_float("ratio", 0.5f).status());
  }
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  if (ctx.num_outputs() > 1) {
    DataType mask = ctx.opset() >= kBoolMaskSince ? DataType::kBool : ctx.input_dtype(0);
    ctx.set_output_like(1, mask, 0);
  }
  return ok_status();
}

Status dropout_cpu(KernelContext& ctx) {
  if (ctx.opset() >= kRatioAsInputSince && ctx.has_input(2)) {
    const TensorRef& t = ctx.input(2);
    if (t.dtype != DataType::kBool) return ctx.error("training_mode must be bool");
    for (int64_t i = 0; i < t.numel(); ++i)
      if (bool_bytes(t)[i] != 0) return ctx.unsupported(kTrainingUnsupported);
  }
  SRT_RETURN_IF_ERROR(copy_input0(ctx));
  if (!ctx.has_output(1)) return ok_status();
  SRT_RETURN_IF_ERROR(check_same_numel(ctx, 0, 1));
  const TensorRef& mask = ctx.output(1);
  return dispatch<kFloats | kBools>(mask.dtype, ctx.node().describe(), [&]<typename T>() {
    T* p = mask.as<T>();
    for (int64_t i = 0, n = mask.numel(); i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = true;
      else p[i] = store<T>(1.f);
    }
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Identity, {.op_type = "Identity", .infer = identity_infer, .cpu = identity_cpu,
                                .cpu_dtypes = kAnyDType, .view = true});
// training_mode (input 2) is a shape input so a device backend gets its value on the host
// and can refuse training without waiting on its stream.
STREAMRT_REGISTER_OP(Dropout, {.op_type = "Dropout", .min_opset = 7, .infer = dropout_infer,
                               .cpu = dropout_cpu, .shape_inputs = {2}, .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops
