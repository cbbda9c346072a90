// Concat: joins inputs along 'axis'. Like onnxruntime, an input with zero elements whose rank
// differs from the others is ignored (exporters emit such empty 1-D pieces when building
// shape vectors); a same-rank input with a zero-size axis simply contributes nothing.
// Concatenating partly known shape vectors gives their known elements.
#include "ops/concat.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"
#include "ops/partial_ints.h"

namespace streamrt::ops {
namespace {

Result<int64_t> read_axis(const ir::Node& node) {
  // Concat-1 defaulted axis to 1; from opset 4 it is required.
  if (node.opset < 4) return node.attr_int("axis", 1);
  return node.attr_int("axis");
}

bool known_empty(const TensorInfo& t) {
  if (!t.has_shape) return false;
  for (int64_t d : t.dims)
    if (d == 0) return true;
  return false;
}

// Concat of 1-D shape pieces some of which are partly known (Concat(Unsqueeze(seq), [8], [64])):
// the known elements, in order. Nothing when a piece is not 1-D or nothing is known of it.
void publish_partial(InferContext& ctx) {
  PartialInts out;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.input_dims(i).size() != 1) return;
    auto p = ctx.input_partial(i);
    if (!p) return;
    out.insert(out.end(), p->begin(), p->end());
  }
  ctx.set_output_partial(0, std::move(out));
}

Status infer(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.error("needs at least one input");
  SRT_ASSIGN_OR_RETURN(int64_t axis, read_axis(ctx.node()));
  const DataType dt = ctx.input_dtype(0);
  const TensorInfo* ref = nullptr;  // the input whose rank all others must have
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    if (ctx.input_dtype(i) != dt)
      return ctx.error("input " + std::to_string(i) + " is " + dtype_name(ctx.input_dtype(i)) +
                       ", input 0 is " + dtype_name(dt));
    const TensorInfo& t = ctx.input(i);
    if (t.has_shape && (!ref || (known_empty(*ref) && !known_empty(t)))) ref = &t;
  }
  if (!ref) {
    ctx.set_output_unranked(0, dt);
    return ok_status();
  }
  const int64_t rank = static_cast<int64_t>(ref->dims.size());
  if (rank == 0) return ctx.error("cannot concatenate scalars");
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx, axis, rank));
  Dims out = ref->dims;
  out[a] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorInfo& t = ctx.input(i);
    if (!t.has_shape) {
      out[a] = kDynamicDim;
      continue;
    }
    if (static_cast<int64_t>(t.dims.size()) != rank) {
      if (known_empty(t)) continue;
      return ctx.error("input " + std::to_string(i) + " has rank " + std::to_string(t.dims.size()) +
                       ", expected " + std::to_string(rank));
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == a) continue;
      auto m = merge_dim(out[d], t.dims[d]);
      if (!m)
        return ctx.error("input " + std::to_string(i) + " has dims " + dims_to_string(t.dims) +
                         ", which do not match " + dims_to_string(ref->dims) + " off axis " + std::to_string(a));
      out[d] = *m;
    }
    if (out[a] < 0 || t.dims[a] < 0) out[a] = kDynamicDim;
    else if (__builtin_add_overflow(out[a], t.dims[a], &out[a])) return ctx.error("axis length overflows");
  }
  const bool one_d = rank == 1;
  ctx.set_output(0, dt, std::move(out));
  if (one_d) publish_partial(ctx);
  return ok_status();
}

// Plan load: axis within the inputs' rank (the kernel strides over it).
Status verify(const InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(int64_t axis, read_axis(ctx.node()));
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    // Empty pieces of another rank are ignored (see the top of this file).
    if (!ctx.has_input(i) || !ctx.input(i).has_shape || known_empty(ctx.input(i))) continue;
    const int64_t rank = static_cast<int64_t>(ctx.input_dims(i).size());
    if (rank > 0 && (axis < -rank || axis >= rank))
      return ctx.error("attribute 'axis' is " + std::to_string(axis) + ", outside [" + std::to_string(-rank) +
                       ", " + std::to_string(rank) + ") for input " + std::to_string(i));
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ConcatLayout l, concat_layout(ctx));
  const TensorRef& y = ctx.output(0);
  const size_t esize = dtype_size(y.dtype);
  char* dst = static_cast<char*>(y.data);
  for (int64_t o = 0; o < l.outer; ++o) {
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const TensorRef& x = ctx.input(i);
      if (x.dims.size() != l.rank) continue;
      const size_t block = static_cast<size_t>(x.dims[l.axis] * l.inner) * esize;
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const char*>(x.data) + static_cast<size_t>(o) * block, block);
      dst += block;
    }
  }
  return ok_status();
}

}  // namespace

Result<ConcatLayout> concat_layout(const KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 0));
  const TensorRef& y = ctx.output(0);
  SRT_ASSIGN_OR_RETURN(int64_t axis, read_axis(ctx.node()));
  const size_t rank = y.dims.size();
  if (rank == 0) return ctx.error("cannot concatenate scalars");
  SRT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(ctx.node(), axis, static_cast<int64_t>(rank)));
  const size_t ax = static_cast<size_t>(a);
  // Validate first: the output must be exactly the inputs laid side by side.
  int64_t total = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorRef& x = ctx.input(i);
    if (x.dims.size() != rank && x.numel() == 0) continue;
    bool ok = x.dims.size() == rank && x.dtype == y.dtype;
    for (size_t d = 0; ok && d < rank; ++d) ok = d == ax || x.dims[d] == y.dims[d];
    if (!ok) return ctx.error("input " + std::to_string(i) + " " + dims_to_string(x.dims) +
                              " does not fit output " + dims_to_string(y.dims));
    total += x.dims[ax];
  }
  if (total != y.dims[ax]) return ctx.error("inputs do not add up to the output along the axis");
  return ConcatLayout{rank, ax, dims_product(y.dims, 0, ax), dims_product(y.dims, ax + 1, rank)};
}

STREAMRT_REGISTER_OP(Concat, {.op_type = "Concat", .infer = infer, .cpu = cpu, .verify = verify,
                              .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
