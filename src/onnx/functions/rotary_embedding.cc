// ONNX RotaryEmbedding (opset 23) as a composition around streamrt's Rotary op:
//   X [B, H, S, D] (or 3-D [B, S, H * D] with num_heads, viewed as [B, S, H, D]);
//   cos / sin = Gather(cache, position_ids) when position_ids is given, else the caches [B, S, R/2];
//   the first R = rotary_embedding_dim (0: all D) channels rotate, the rest pass through.
// Rotate-half (interleaved = 0) is streamrt's Rotary with cos / sin repeated to R channels; the
// interleaved form (pairs x[2i], x[2i+1]) is written out with element-wise ops.
#include "onnx/functions/function_op.h"

namespace streamrt::onnx_import {
namespace {

bool always(const ir::Node&) { return true; }

// The rotated channels for the interleaved form: pairs (even, odd) of x [.., R] rotate by cos / sin
// [.., R/2] (already broadcastable to x's leading dims).
ir::ValueId rotate_interleaved(GraphWriter& w, ir::ValueId x, ir::ValueId cos, ir::ValueId sin) {
  ir::ValueId pairs = w.add("Reshape", {x, w.ints({0, 0, 0, -1, 2})});
  ir::ValueId axis = w.ints({-1});
  ir::ValueId even = w.add("Slice", {pairs, w.ints({0}), w.ints({1}), axis});
  ir::ValueId odd = w.add("Slice", {pairs, w.ints({1}), w.ints({2}), axis});
  ir::ValueId c = w.add("Unsqueeze", {cos, axis}), s = w.add("Unsqueeze", {sin, axis});
  ir::ValueId y_even = w.add("Sub", {w.add("Mul", {even, c}), w.add("Mul", {odd, s})});
  ir::ValueId y_odd = w.add("Add", {w.add("Mul", {odd, c}), w.add("Mul", {even, s})});
  ir::ValueId y = w.add("Concat", {y_even, y_odd}, {{"axis", int_attr(-1)}});
  return w.add("Reshape", {y, w.ints({0, 0, 0, -1})});
}

Status expand(GraphWriter& w, std::span<const ops::TensorInfo> in) {
  const ir::Node& n = w.origin();
  if (n.inputs.size() < 3 || n.inputs[0] == ir::kNoValue || n.inputs[1] == ir::kNoValue || n.inputs[2] == ir::kNoValue)
    return n.error(StatusCode::kInvalidModel, "needs inputs X, cos_cache and sin_cache");
  if (!in[0].has_shape) return n.error(StatusCode::kUnsupported, "the rank of X must be known");
  const size_t rank = in[0].dims.size();
  if (rank != 3 && rank != 4) return n.error(StatusCode::kInvalidModel, "X must be 3-D or 4-D");
  SRT_ASSIGN_OR_RETURN(int64_t interleaved, n.attr_int("interleaved", 0));
  SRT_ASSIGN_OR_RETURN(int64_t heads, n.attr_int("num_heads", 0));
  SRT_ASSIGN_OR_RETURN(int64_t rot_dim, n.attr_int("rotary_embedding_dim", 0));
  if (rank == 3 && heads <= 0) return n.error(StatusCode::kInvalidModel, "3-D X needs num_heads > 0");
  if (rot_dim < 0 || rot_dim % 2) return n.error(StatusCode::kInvalidModel, "rotary_embedding_dim must be even and >= 0");
  const int64_t d = rank == 4 ? in[0].dims[3] : (in[0].dims[2] > 0 ? in[0].dims[2] / heads : -1);
  if (rot_dim > 0 && d > 0 && rot_dim > d)
    return n.error(StatusCode::kInvalidModel, "rotary_embedding_dim exceeds the head size");

  // x as [B, H, S, D] or, from 3-D, [B, S, H, D]; cos / sin get a unit axis for the heads.
  ir::ValueId x = rank == 4 ? n.inputs[0] : w.add("Reshape", {n.inputs[0], w.ints({0, 0, heads, -1})});
  ir::ValueId cos = n.inputs[1], sin = n.inputs[2];
  if (n.inputs.size() > 3 && n.inputs[3] != ir::kNoValue) {
    cos = w.add("Gather", {cos, n.inputs[3]}, {{"axis", int_attr(0)}});
    sin = w.add("Gather", {sin, n.inputs[3]}, {{"axis", int_attr(0)}});
  }
  ir::ValueId head_axis = w.ints({rank == 4 ? 1 : 2});
  cos = w.add("Unsqueeze", {cos, head_axis});
  sin = w.add("Unsqueeze", {sin, head_axis});

  const bool partial = rot_dim > 0 && rot_dim != d;
  ir::ValueId last = w.ints({-1});
  ir::ValueId x_rot = partial ? w.add("Slice", {x, w.ints({0}), w.ints({rot_dim}), last}) : x;
  ir::ValueId y;
  if (interleaved) {
    y = rotate_interleaved(w, x_rot, cos, sin);
  } else {
    GraphWriter::Attrs cat{{"axis", int_attr(-1)}};
    y = w.add("Rotary", {x_rot, w.add("Concat", {cos, cos}, cat), w.add("Concat", {sin, sin}, cat)});
  }
  if (partial) {
    ir::ValueId pass = w.add("Slice", {x, w.ints({rot_dim}), w.ints({INT64_MAX}), last});
    y = w.add("Concat", {y, pass}, {{"axis", int_attr(-1)}});
  }
  if (rank == 4) w.add_to("Identity", {y}, {n.outputs[0]});
  else w.add_to("Reshape", {y, w.ints({0, 0, -1})}, {n.outputs[0]});
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_FUNCTION_OP(RotaryEmbedding, {.op_type = "RotaryEmbedding", .domain = "", .min_opset = 23,
                                                .applies = always, .expand = expand});

}  // namespace streamrt::onnx_import
