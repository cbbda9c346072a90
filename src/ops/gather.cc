// Gather: picks slices of `data` along 'axis' at int32/int64 `indices` (negative ones count
// from the end). Output dims: data[:axis] + indices.dims + data[axis+1:]. Gathering from a
// partly known shape vector gives the known elements it picks.
#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/indexing.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

// Gather from a shape vector whose elements are partly known (Gather(Shape(x), -1)): the picked
// elements, known where the data's are. Only for 1-D data and known indices.
void publish_partial(InferContext& ctx, int64_t axis) {
  const Tensor* iv = ctx.input_value(1);
  if (axis != 0 || ctx.input_dims(0).size() != 1 || !iv || ctx.input_value(0)) return;
  auto data = ctx.input_partial(0);
  auto idx = iv->to_int64_vector();
  if (!data || !idx.ok()) return;
  const int64_t n = static_cast<int64_t>(data->size());
  PartialInts out;
  for (int64_t i : *idx) {
    if (i < -n || i >= n) return;  // infer() reports it
    out.push_back((*data)[static_cast<size_t>(i < 0 ? i + n : i)]);
  }
  ctx.set_output_partial(0, std::move(out));
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("needs data and indices");
  const DataType dt = ctx.input_dtype(0);
  if (!is_index_type(ctx.input_dtype(1)))
    return ctx.error(std::string("indices must be int32 or int64, got ") + dtype_name(ctx.input_dtype(1)));
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  const TensorInfo& data = ctx.input(0);
  const TensorInfo& idx = ctx.input(1);
  if (!data.has_shape || !idx.has_shape) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) return ctx.error("data must have rank >= 1");
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx, axis, rank));
  if (const Tensor* iv = ctx.input_value(1); iv && data.dims[a] >= 0) {
    SRT_ASSIGN_OR_RETURN(auto vals, known_int_values(ctx, 1, "indices"));
    SRT_RETURN_IF_ERROR(check_indices(ctx.node(), StatusCode::kInvalidModel, vals, data.dims[a]));
  }
  Dims out(data.dims.begin(), data.dims.begin() + a);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.dims.begin() + a + 1, data.dims.end());
  ctx.set_output(0, dt, std::move(out));
  publish_partial(ctx, a);
  return ok_status();
}

// Plan load: axis within data's rank (the kernel strides over it).
Status verify(const InferContext& ctx) { return verify_axis_attr(ctx, "axis", 0); }

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& data = ctx.input(0);
  const TensorRef& indices = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  const size_t rank = data.dims.size();
  if (rank == 0) return ctx.error("data must have rank >= 1");
  if (!is_index_type(indices.dtype)) return ctx.error("indices must be int32 or int64");
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  const int64_t dim = data.dims[ax];
  std::vector<int64_t> idx = read_int_values(indices);
  // Indices are data: an out-of-range one is a run-time error, never an out-of-bounds read.
  SRT_RETURN_IF_ERROR(check_indices(ctx.node(), StatusCode::kInvalidArgument, idx, dim));
  Dims expect(data.dims.begin(), data.dims.begin() + a);
  expect.insert(expect.end(), indices.dims.begin(), indices.dims.end());
  expect.insert(expect.end(), data.dims.begin() + a + 1, data.dims.end());
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, data.dtype, expect));
  const int64_t outer = dims_product(data.dims, 0, ax);
  const size_t block = static_cast<size_t>(dims_product(data.dims, ax + 1, rank)) * dtype_size(data.dtype);
  if (block == 0) return ok_status();
  const char* src = static_cast<const char*>(data.data);
  char* dst = static_cast<char*>(y.data);
  for (int64_t o = 0; o < outer; ++o) {
    const char* base = src + static_cast<size_t>(o * dim) * block;
    for (int64_t i : idx) {
      std::memcpy(dst, base + static_cast<size_t>(i < 0 ? i + dim : i) * block, block);
      dst += block;
    }
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Gather, {.op_type = "Gather", .infer = infer, .cpu = cpu, .verify = verify,
                              .cpu_dtypes = kAnyDType, .streamable_inputs = {0}, .table_inputs = {0}});

}  // namespace streamrt::ops
