// DepthToSpace (modes DCR, the default, and CRD) and SpaceToDepth on NCHW tensors.
// Both are a 6-D reshape + transpose + reshape, done here as one strided copy.
#include "ops/depth_to_space.h"

#include "ops/common.h"

namespace streamrt::ops {
namespace {

bool is_d2s(const ir::Node& node) { return node.op_type == "DepthToSpace"; }

Result<int64_t> read_blocksize(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t bs, node.attr_int("blocksize"));
  int64_t sq;
  if (bs <= 0 || __builtin_mul_overflow(bs, bs, &sq))
    return node.error(StatusCode::kInvalidModel, "blocksize " + std::to_string(bs) + " is out of range");
  return bs;
}

// True for CRD; DCR otherwise. SpaceToDepth has no mode.
Result<bool> read_crd(const ir::Node& node) {
  if (!is_d2s(node)) return false;
  SRT_ASSIGN_OR_RETURN(std::string mode, node.attr_string("mode", std::string("DCR")));
  if (mode != "DCR" && mode != "CRD") return node.error(StatusCode::kInvalidModel, "mode '" + mode + "' is not DCR or CRD");
  return mode == "CRD";
}

// Output dims for input (n, c, h, w); -1 stays -1. Static dims that do not divide are errors.
Result<Dims> output_dims(const ir::Node& node, const Dims& in, int64_t bs) {
  auto div = [&](int64_t v, int64_t by, const char* what) -> Result<int64_t> {
    if (v < 0) return kDynamicDim;
    if (v % by != 0)
      return node.error(StatusCode::kInvalidModel, std::string(what) + " " + std::to_string(v) +
                                                       " is not a multiple of " + std::to_string(by));
    return v / by;
  };
  auto mul = [&](int64_t v, int64_t by) -> Result<int64_t> {
    int64_t out;
    if (v < 0) return kDynamicDim;
    if (__builtin_mul_overflow(v, by, &out)) return node.error(StatusCode::kInvalidModel, "output dim overflows");
    return out;
  };
  if (is_d2s(node)) {
    SRT_ASSIGN_OR_RETURN(int64_t c, div(in[1], bs * bs, "channels"));
    SRT_ASSIGN_OR_RETURN(int64_t h, mul(in[2], bs));
    SRT_ASSIGN_OR_RETURN(int64_t w, mul(in[3], bs));
    return Dims{in[0], c, h, w};
  }
  SRT_ASSIGN_OR_RETURN(int64_t h, div(in[2], bs, "height"));
  SRT_ASSIGN_OR_RETURN(int64_t w, div(in[3], bs, "width"));
  SRT_ASSIGN_OR_RETURN(int64_t c, mul(in[1], bs * bs));
  return Dims{in[0], c, h, w};
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  SRT_ASSIGN_OR_RETURN(int64_t bs, read_blocksize(ctx.node()));
  SRT_RETURN_IF_ERROR(read_crd(ctx.node()).status());
  const TensorInfo& x = ctx.input(0);
  const DataType dt = ctx.input_dtype(0);
  if (!x.has_shape) {
    ctx.set_output(0, dt, Dims(4, kDynamicDim));
    return ok_status();
  }
  if (x.dims.size() != 4) return ctx.error("input must be 4-D (NCHW), got " + dims_to_string(x.dims));
  SRT_ASSIGN_OR_RETURN(Dims out, output_dims(ctx.node(), x.dims, bs));
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

}  // namespace

Result<StridedView> depth_space_view(const KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(int64_t bs, read_blocksize(ctx.node()));
  SRT_ASSIGN_OR_RETURN(bool crd, read_crd(ctx.node()));
  if (x.dims.size() != 4) return ctx.error("input must be 4-D (NCHW)");
  SRT_ASSIGN_OR_RETURN(Dims out, output_dims(ctx.node(), x.dims, bs));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, out));
  const int64_t n = x.dims[0], c = x.dims[1], h = x.dims[2], w = x.dims[3];
  // The input seen as 6-D, and the permutation that lays it out as the output.
  Dims view;
  std::vector<int64_t> perm;
  if (is_d2s(ctx.node()) && !crd) {
    view = {n, bs, bs, c / (bs * bs), h, w};
    perm = {0, 3, 4, 1, 5, 2};
  } else if (is_d2s(ctx.node())) {
    view = {n, c / (bs * bs), bs, bs, h, w};
    perm = {0, 1, 4, 2, 5, 3};
  } else {
    view = {n, c, h / bs, bs, w / bs, bs};
    perm = {0, 3, 5, 1, 2, 4};
  }
  const auto strides = dense_strides(view);
  StridedView v;
  for (int64_t p : perm) {
    v.dims.push_back(view[p]);
    v.strides.push_back(strides[p]);
  }
  return v;
}

namespace {

// Plan load: blocksize bounded (the shape rule multiplies dims by it).
Status verify(const InferContext& ctx) { return verify_attr_range(ctx.node(), "blocksize", 1, kMaxAttrExtent); }

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(StridedView v, depth_space_view(ctx));
  const TensorRef& x = ctx.input(0);
  strided_copy(ctx.output(0).data, x.data, dtype_size(x.dtype), v.dims, v.strides, 0);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(DepthToSpace, {.op_type = "DepthToSpace", .infer = infer, .cpu = cpu, .verify = verify,
                                    .cpu_dtypes = kAnyDType});
STREAMRT_REGISTER_OP(SpaceToDepth, {.op_type = "SpaceToDepth", .infer = infer, .cpu = cpu, .verify = verify,
                                    .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
