// DepthToSpace (DCR / CRD) and SpaceToDepth on CUDA: the 6-D view + permutation of
// src/ops/depth_to_space.cc, done as one device strided copy.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/data_movement.h"

namespace streamrt::cuda {
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

// Output dims for static input (n, c, h, w); dims that do not divide are errors.
Result<Dims> output_dims(const ir::Node& node, const Dims& in, int64_t bs) {
  auto fail = [&](const std::string& what, int64_t v, int64_t by) {
    return node.error(StatusCode::kInvalidModel, what + " " + std::to_string(v) + " is not a multiple of " +
                                                     std::to_string(by));
  };
  int64_t a, b;
  if (is_d2s(node)) {
    if (in[1] % (bs * bs) != 0) return fail("channels", in[1], bs * bs);
    if (__builtin_mul_overflow(in[2], bs, &a) || __builtin_mul_overflow(in[3], bs, &b))
      return node.error(StatusCode::kInvalidModel, "output dim overflows");
    return Dims{in[0], in[1] / (bs * bs), a, b};
  }
  if (in[2] % bs != 0) return fail("height", in[2], bs);
  if (in[3] % bs != 0) return fail("width", in[3], bs);
  if (__builtin_mul_overflow(in[1], bs * bs, &a)) return node.error(StatusCode::kInvalidModel, "output dim overflows");
  return Dims{in[0], a, in[2] / bs, in[3] / bs};
}

Status depth_space_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 1));
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(int64_t bs, read_blocksize(ctx.node()));
  SRT_ASSIGN_OR_RETURN(bool crd, read_crd(ctx.node()));
  if (x.dims.size() != 4) return ctx.error("input must be 4-D (NCHW)");
  SRT_ASSIGN_OR_RETURN(Dims out, output_dims(ctx.node(), x.dims, bs));
  SRT_RETURN_IF_ERROR(ops::check_output(ctx, 0, x.dtype, out));
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
  const auto strides = ops::dense_strides(view);
  Dims out6;
  std::vector<int64_t> src_strides;
  for (int64_t p : perm) {
    out6.push_back(view[p]);
    src_strides.push_back(strides[p]);
  }
  return strided_copy_cuda(y.data, x.data, dtype_size(x.dtype), out6, src_strides, 0, ctx.stream(),
                           ctx.node().describe());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(DepthToSpace, "DepthToSpace", depth_space_cuda);
STREAMRT_REGISTER_CUDA_KERNEL(SpaceToDepth, "SpaceToDepth", depth_space_cuda);

}  // namespace streamrt::cuda
