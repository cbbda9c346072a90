// BitShift (opset 11): X << Y or X >> Y (attribute direction "LEFT" / "RIGHT", required) with
// numpy broadcasting, for uint8 / uint16 / uint32 / uint64. A shift by the type's width or more
// gives 0 (as numpy), never an undefined C++ shift.
// The CUDA twin is backends/cuda/kernels/bitshift.cu.
#include "ops/bitshift.h"

#include "ops/data_movement.h"
#include "ops/elementwise_util.h"

namespace streamrt::ops {

Result<bool> bitshift_left(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string dir, node.attr_string("direction"));
  if (dir == "LEFT") return true;
  if (dir == "RIGHT") return false;
  return node.error(StatusCode::kInvalidModel, "attribute 'direction' is '" + dir + "', expected LEFT or RIGHT");
}

namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(bitshift_left(ctx.node()).status());
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kUnsigned));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kUnsigned));
  SRT_RETURN_IF_ERROR(require_same_dtype(ctx, 0, 1));
  return infer_broadcast_output(ctx, 0, 2, ctx.input_dtype(0));
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(bool left, bitshift_left(ctx.node()));
  const TensorRef& a = ctx.input(0);
  const TensorRef& b = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  if (b.dtype != a.dtype || y.dtype != a.dtype) return ctx.error("X, Y and the output must share one type");
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, a.dims, y.dims, "input X"));
  SRT_RETURN_IF_ERROR(check_broadcasts_to(ctx, b.dims, y.dims, "input Y"));
  return dispatch<kUnsigned>(a.dtype, ctx.node().describe(), [&]<typename T>() {
    const T* pa = a.as<T>();
    const T* pb = b.as<T>();
    T* py = y.as<T>();
    for_each_broadcast<2>(y.dims, {a.dims, b.dims}, [&](int64_t i, const std::array<int64_t, 2>& o) {
      py[i] = bitshift_value(pa[o[0]], pb[o[1]], left);
    });
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(BitShift, {.op_type = "BitShift", .min_opset = 11, .infer = infer, .cpu = cpu,
                                .cpu_dtypes = dtypes(kUnsigned)});

}  // namespace streamrt::ops
