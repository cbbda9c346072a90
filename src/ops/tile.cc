// Tile (opset 6+): repeats the input `repeats[d]` times along each dim d.
#include "ops/tile.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

// in * repeats, or an error on overflow; dynamic `in` stays dynamic (0 repeats give 0).
Result<int64_t> tiled_dim(const ir::Node& node, int64_t in, int64_t repeats) {
  if (repeats == 0) return 0;
  if (in < 0) return kDynamicDim;
  int64_t out;
  if (__builtin_mul_overflow(in, repeats, &out))
    return node.error(StatusCode::kInvalidModel, "tiling " + std::to_string(in) + " by " + std::to_string(repeats) +
                                                     " overflows");
  return out;
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("needs input and repeats");
  if (ctx.opset() < 6) return ctx.unsupported("Tile before opset 6 (tiles/axis inputs) is not supported");
  const DataType dt = ctx.input_dtype(0);
  const TensorInfo& x = ctx.input(0);
  if (!ctx.input_value(1)) {
    // Unknown repeats: the rank is still the input's (or the repeats' length).
    int64_t rank = x.has_shape ? static_cast<int64_t>(x.dims.size()) : static_length_1d(ctx, 1);
    if (rank < 0) ctx.set_output_unranked(0, dt);
    else ctx.set_output(0, dt, Dims(static_cast<size_t>(rank), kDynamicDim));
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(auto repeats, known_int_values(ctx, 1, "repeats"));
  Dims in = x.has_shape ? x.dims : Dims(repeats.size(), kDynamicDim);
  SRT_RETURN_IF_ERROR(check_repeats(ctx.node(), repeats, in.size()));
  Dims out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    SRT_ASSIGN_OR_RETURN(out[d], tiled_dim(ctx.node(), in[d], repeats[d]));
  }
  ctx.set_output(0, dt, std::move(out));
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& x = ctx.input(0);
  const TensorRef& y = ctx.output(0);
  const std::vector<int64_t> repeats = read_int_values(ctx.input(1));
  const size_t rank = x.dims.size();
  SRT_RETURN_IF_ERROR(check_repeats(ctx.node(), repeats, rank));
  Dims out(rank);
  for (size_t d = 0; d < rank; ++d) {
    SRT_ASSIGN_OR_RETURN(out[d], tiled_dim(ctx.node(), x.dims[d], repeats[d]));
  }
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, out));
  if (y.numel() == 0) return ok_status();
  const size_t esize = dtype_size(x.dtype);
  if (rank == 0) {
    std::memcpy(y.data, x.data, esize);
    return ok_status();
  }
  // Each output row (last dim) is the matching input row repeated; the input row is found by
  // taking every outer output index modulo the input dim.
  const auto in_strides = dense_strides(x.dims);
  const size_t row_bytes = static_cast<size_t>(x.dims[rank - 1]) * esize;
  const int64_t rows = dims_product(out, 0, rank - 1);
  std::vector<int64_t> idx(rank - 1, 0);
  char* dst = static_cast<char*>(y.data);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src = 0;
    for (size_t d = 0; d + 1 < rank; ++d) src += (idx[d] % x.dims[d]) * in_strides[d];
    const char* row = static_cast<const char*>(x.data) + static_cast<size_t>(src) * esize;
    for (int64_t k = 0; k < repeats[rank - 1]; ++k, dst += row_bytes) std::memcpy(dst, row, row_bytes);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return ok_status();
}

}  // namespace

Status check_repeats(const ir::Node& node, const std::vector<int64_t>& repeats, size_t rank) {
  if (repeats.size() != rank)
    return node.error(StatusCode::kInvalidModel, "repeats has " + std::to_string(repeats.size()) +
                                                     " values for a rank-" + std::to_string(rank) + " input");
  for (int64_t r : repeats)
    if (r < 0) return node.error(StatusCode::kInvalidModel, "repeat " + std::to_string(r) + " is negative");
  return ok_status();
}

STREAMRT_REGISTER_OP(Tile, {.op_type = "Tile", .infer = infer, .cpu = cpu, .shape_inputs = {1},
                            .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
