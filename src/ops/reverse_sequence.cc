// ReverseSequence (opset 10): for each batch entry b (along batch_axis), the first
// sequence_lens[b] elements along time_axis are reversed and the rest copied as they are.
// batch_axis / time_axis are 0 and 1 (one each); sequence_lens is int64 with one length per
// batch entry, each in [0, time length] (outside it is an error, never an access out of
// bounds). Any data type, moved as bytes.
#include "ops/reverse_sequence.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

Result<SequenceAxes> sequence_axes(const ir::Node& node) {
  SequenceAxes a;
  SRT_ASSIGN_OR_RETURN(a.batch, node.attr_int("batch_axis", 1));
  SRT_ASSIGN_OR_RETURN(a.time, node.attr_int("time_axis", 0));
  if (a.batch < 0 || a.batch > 1 || a.time < 0 || a.time > 1 || a.batch == a.time)
    return node.error(StatusCode::kInvalidModel, "batch_axis " + std::to_string(a.batch) + " and time_axis " +
                                                     std::to_string(a.time) + " must be 0 and 1, one each");
  return a;
}

Status check_sequence_dims(const ir::Node& node, StatusCode code, const Dims& input, const Dims& lens,
                           SequenceAxes axes) {
  if (input.size() < 2) return node.error(code, "input must have rank >= 2, got shape " + dims_to_string(input));
  if (lens.size() != 1) return node.error(code, "sequence_lens must be 1-D, got shape " + dims_to_string(lens));
  const int64_t batch = input[static_cast<size_t>(axes.batch)];
  if (batch >= 0 && lens[0] >= 0 && batch != lens[0])
    return node.error(code, "sequence_lens " + dims_to_string(lens) + " must hold one length per batch entry of " +
                                dims_to_string(input));
  return ok_status();
}

namespace {

Status infer(InferContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("needs input and sequence_lens");
  if (ctx.input_dtype(1) != DataType::kInt64)
    return ctx.error(std::string("sequence_lens must be int64, got ") + dtype_name(ctx.input_dtype(1)));
  SRT_ASSIGN_OR_RETURN(SequenceAxes axes, sequence_axes(ctx.node()));
  if (ctx.input(0).has_shape && ctx.input(1).has_shape)
    SRT_RETURN_IF_ERROR(
        check_sequence_dims(ctx.node(), StatusCode::kInvalidModel, ctx.input_dims(0), ctx.input_dims(1), axes));
  ctx.set_output_like(0, ctx.input_dtype(0), 0);
  return ok_status();
}

// Plan load: both axes 0 or 1 (the kernel strides over them).
Status verify(const InferContext& ctx) { return sequence_axes(ctx.node()).status(); }

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  const TensorRef& x = ctx.input(0);
  const TensorRef& lens_t = ctx.input(1);
  if (lens_t.dtype != DataType::kInt64) return ctx.error("sequence_lens must be int64");
  SRT_ASSIGN_OR_RETURN(SequenceAxes axes, sequence_axes(ctx.node()));
  SRT_RETURN_IF_ERROR(check_sequence_dims(ctx.node(), StatusCode::kInvalidArgument, x.dims, lens_t.dims, axes));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, x.dims));
  const int64_t steps = x.dims[static_cast<size_t>(axes.time)];
  const std::vector<int64_t> lens = read_int_values(lens_t);
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > steps)
      return ctx.error("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " +
                       std::to_string(steps) + "]");
  // Element (t, b, rest) in the order of axes 0, 1: `block` bytes of rest per (t, b).
  const size_t block = static_cast<size_t>(dims_product(x.dims, 2, x.dims.size())) * dtype_size(x.dtype);
  const int64_t d1 = x.dims[1];
  const char* src = static_cast<const char*>(x.data);
  char* dst = static_cast<char*>(ctx.output(0).data);
  for (int64_t i0 = 0; i0 < x.dims[0]; ++i0)
    for (int64_t i1 = 0; i1 < d1; ++i1) {
      const int64_t t = axes.time == 0 ? i0 : i1;
      const int64_t len = lens[static_cast<size_t>(axes.time == 0 ? i1 : i0)];
      const int64_t from = t < len ? len - 1 - t : t;
      const int64_t s0 = axes.time == 0 ? from : i0, s1 = axes.time == 0 ? i1 : from;
      std::memcpy(dst + static_cast<size_t>(i0 * d1 + i1) * block, src + static_cast<size_t>(s0 * d1 + s1) * block,
                  block);
    }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(ReverseSequence,
                     {.op_type = "ReverseSequence", .min_opset = 10, .infer = infer, .cpu = cpu, .verify = verify,
                                                            .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
