// Split: cuts the input along 'axis' into the node's outputs. Sizes come from the 'split'
// attribute (opset < 13) or the optional 'split' input (opset >= 13); without them the axis is
// split equally, unevenly (last chunk smaller) when opset 18's 'num_outputs' is given.
#include "ops/split.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

Result<SplitSpec> read_spec(const InferContext& ctx) {
  SplitSpec spec;
  const ir::Node& node = ctx.node();
  SRT_ASSIGN_OR_RETURN(IntList list, read_int_list(ctx, 1, "split"));
  spec.given = list.given;
  spec.values = std::move(list.values);
  if (node.has_attr("num_outputs")) {
    SRT_ASSIGN_OR_RETURN(int64_t k, node.attr_int("num_outputs"));
    if (spec.given) return ctx.error("give either split or num_outputs, not both");
    if (k != static_cast<int64_t>(ctx.num_outputs()))
      return ctx.error("num_outputs is " + std::to_string(k) + " but the node has " +
                       std::to_string(ctx.num_outputs()) + " outputs");
    spec.uneven_ok = true;
  }
  return spec;
}

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("missing input 0");
  if (ctx.num_outputs() == 0) return ctx.error("has no outputs");
  const DataType dt = ctx.input_dtype(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(SplitSpec spec, read_spec(ctx));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_unranked(i, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  if (rank == 0) return ctx.error("cannot split a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx, axis, rank));
  SRT_ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx.node(), spec, x.dims[a], ctx.num_outputs()));
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    Dims d = x.dims;
    d[a] = sizes[i];
    ctx.set_output(i, dt, std::move(d));
  }
  return ok_status();
}

// Plan load: axis within the input's rank and split sizes (attribute form) non-negative and
// bounded (the shape rule sums them).
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(verify_axis_attr(ctx, "axis", 0));
  return verify_attr_range(ctx.node(), "split", 0, kMaxAttrExtent);
}

Status cpu(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.error("input 0 is not bound");
  const TensorRef& x = ctx.input(0);
  const size_t rank = x.dims.size();
  if (rank == 0) return ctx.error("cannot split a scalar");
  SRT_ASSIGN_OR_RETURN(int64_t axis, ctx.node().attr_int("axis", 0));
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  const size_t esize = dtype_size(x.dtype);
  const int64_t outer = dims_product(x.dims, 0, ax);
  const int64_t inner = dims_product(x.dims, ax + 1, rank);
  const int64_t dim = x.dims[ax];
  SplitSpec spec;
  SRT_ASSIGN_OR_RETURN(spec.values, int_list_input_or_attr(ctx, 1, "split"));
  spec.given = spec.values.has_value();
  spec.uneven_ok = ctx.node().has_attr("num_outputs");
  SRT_ASSIGN_OR_RETURN(auto sizes, split_sizes(ctx.node(), spec, dim, ctx.num_outputs()));
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const TensorRef& y = ctx.output(i);
    const int64_t size = sizes[i];
    if (y.present()) {
      Dims expect = x.dims;
      expect[ax] = size;
      SRT_RETURN_IF_ERROR(check_output(ctx, i, x.dtype, expect));
      const size_t block = static_cast<size_t>(size * inner) * esize;
      for (int64_t o = 0; o < outer && block; ++o)
        std::memcpy(static_cast<char*>(y.data) + static_cast<size_t>(o) * block,
                    static_cast<const char*>(x.data) + static_cast<size_t>((o * dim + offset) * inner) * esize,
                    block);
    }
    offset += size;
  }
  return ok_status();
}

}  // namespace

Result<std::vector<int64_t>> split_sizes(const ir::Node& node, const SplitSpec& spec, int64_t dim, size_t n) {
  auto fail = [&](const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); };
  if (spec.given) {
    if (!spec.values) return std::vector<int64_t>(n, kDynamicDim);
    const auto& v = *spec.values;
    if (v.size() != n)
      return fail("split has " + std::to_string(v.size()) + " sizes for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : v) {
      if (s < 0) return fail("split size " + std::to_string(s) + " is negative");
      if (__builtin_add_overflow(sum, s, &sum)) return fail("split sizes overflow");
    }
    if (dim >= 0 && sum != dim)
      return fail("split sizes add up to " + std::to_string(sum) + ", the axis has " + std::to_string(dim));
    return v;
  }
  if (dim < 0) return std::vector<int64_t>(n, kDynamicDim);
  const int64_t count = static_cast<int64_t>(n);
  if (!spec.uneven_ok && dim % count != 0)
    return fail("axis of length " + std::to_string(dim) + " does not split into " + std::to_string(n) +
                " equal parts");
  const int64_t chunk = (dim + count - 1) / count;
  std::vector<int64_t> sizes;
  int64_t left = dim;
  for (size_t i = 0; i < n; ++i) {
    sizes.push_back(std::min(chunk, left));
    left -= sizes.back();
  }
  return sizes;
}

STREAMRT_REGISTER_OP(Split, {.op_type = "Split", .infer = infer, .cpu = cpu, .verify = verify, .shape_inputs = {1},
                             .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
