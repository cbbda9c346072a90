// ONNX Attention (opset 23 and later) as the composition its function body defines:
//   [3-D: Reshape + Transpose to heads] -> [past: Concat along the sequence = present]
//   -> [grouped K/V: repeat each KV head] -> MatMul(Q, K^T) * scale -> [softcap]
//   -> + bias (mask, padded to the keys; causal) -> Softmax -> [fully masked rows: 0] -> MatMul(V)
//   -> [3-D: back to [B, S, heads * head]]
// streamrt's own Attention op shares the op type (its attributes causal / k_transposed / bshd /
// mask_fill mark it); the builder fuses the plain chain back into it. Causal masking is
// bottom-right aligned with the past length as offset (top-left without a past), as the ONNX
// reference implements it; a query row whose keys are all masked gives 0.
#include <cmath>
#include <limits>

#include "onnx/functions/function_op.h"

namespace streamrt::onnx_import {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool is_onnx_form(const ir::Node& n) {
  for (const char* own : {"causal", "k_transposed", "bshd", "mask_fill"})
    if (n.has_attr(own)) return false;
  return true;
}

bool present(const ir::Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != ir::kNoValue; }
bool wants(const ir::Node& n, size_t i) { return i < n.outputs.size() && n.outputs[i] != ir::kNoValue; }

// [B, S, heads * head] -> [B, heads, S, head].
ir::ValueId to_heads(GraphWriter& w, ir::ValueId x, int64_t heads) {
  ir::ValueId r = w.add("Reshape", {x, w.ints({0, 0, heads, -1})});
  return w.add("Transpose", {r}, {{"perm", ints_attr({0, 2, 1, 3})}});
}

// Element `i` of x's shape as a 0-D int64.
ir::ValueId dim(GraphWriter& w, ir::ValueId x, int64_t i) {
  return w.add("Gather", {w.add("Shape", {x}), w.scalar_int(i)}, {{"axis", int_attr(0)}});
}

// [B, Hkv, S, D] -> [B, Hkv * groups, S, D], each KV head repeated `groups` times in place.
ir::ValueId repeat_heads(GraphWriter& w, ir::ValueId x, int64_t groups) {
  ir::ValueId u = w.add("Unsqueeze", {x, w.ints({2})});
  ir::ValueId e = w.add("Expand", {u, w.ints({1, 1, groups, 1, 1})});
  ir::ValueId shape = w.add("Shape", {x});
  ir::ValueId b = w.add("Slice", {shape, w.ints({0}), w.ints({1})});
  ir::ValueId sd = w.add("Slice", {shape, w.ints({2}), w.ints({4})});
  ir::ValueId target = w.add("Concat", {b, w.ints({-1}), sd}, {{"axis", int_attr(0)}});
  return w.add("Reshape", {e, target});
}

struct Heads {
  int64_t q = 0, kv = 0, head = 0;  // head: Q's head size, 0 when not static
};

Result<Heads> head_counts(const GraphWriter& w, std::span<const ops::TensorInfo> in, bool rank3) {
  const ir::Node& n = w.origin();
  Heads h;
  if (rank3) {
    SRT_ASSIGN_OR_RETURN(h.q, n.attr_int("q_num_heads", 0));
    SRT_ASSIGN_OR_RETURN(h.kv, n.attr_int("kv_num_heads", 0));
    if (h.q <= 0 || h.kv <= 0) return n.error(StatusCode::kInvalidModel, "3-D inputs need q_num_heads and kv_num_heads > 0");
    const int64_t hidden = in[0].dims[2];
    if (hidden > 0) {
      if (hidden % h.q) return n.error(StatusCode::kInvalidModel, "Q's hidden size is not a multiple of q_num_heads");
      h.head = hidden / h.q;
    }
  } else {
    h.q = in[0].dims[1], h.kv = in[1].dims[1], h.head = in[0].dims[3];
    if (h.q < 0 || h.kv < 0)
      return n.error(StatusCode::kUnsupported, "the head counts of 4-D Q and K must be static");
  }
  if (h.kv == 0 || h.q % h.kv != 0)
    return n.error(StatusCode::kInvalidModel, "q heads (" + std::to_string(h.q) + ") must be a multiple of kv heads (" +
                                                  std::to_string(h.kv) + ")");
  return h;
}

// The additive bias [.., Sq, Skv] of Q's type from the mask (bool: true attends; padded with -inf to
// the key count) and the causal rule; kNoValue when there is neither.
Result<ir::ValueId> make_bias(GraphWriter& w, std::span<const ops::TensorInfo> in, ir::ValueId q, ir::ValueId k,
                              bool causal, bool has_past) {
  const DataType t = in[0].dtype;
  SRT_ASSIGN_OR_RETURN(ir::ValueId zero, w.scalar(0.f, t));
  SRT_ASSIGN_OR_RETURN(ir::ValueId neg_inf, w.scalar(kNegInf, t));
  const ir::Node& n = w.origin();
  ir::ValueId bias = ir::kNoValue;
  if (present(n, 3)) {
    ir::ValueId m = n.inputs[3];
    if (in[3].dtype == DataType::kBool) m = w.add("Where", {m, zero, neg_inf});
    const int64_t rank = static_cast<int64_t>(in[3].dims.size());
    ir::ValueId missing = w.add("Sub", {dim(w, k, 2), dim(w, m, rank - 1)});
    std::vector<int64_t> zeros(static_cast<size_t>(2 * rank - 1), 0);
    ir::ValueId pads = w.add("Concat", {w.ints(zeros), w.add("Unsqueeze", {missing, w.ints({0})})}, {{"axis", int_attr(0)}});
    bias = w.add("Pad", {m, pads, neg_inf});
  }
  if (causal) {
    ir::ValueId sq = dim(w, q, 2), skv = dim(w, k, 2);
    ir::ValueId rows = w.add("Range", {w.scalar_int(0), sq, w.scalar_int(1)});
    if (has_past) rows = w.add("Add", {rows, w.add("Sub", {skv, sq})});  // offset: the past length
    ir::ValueId cols = w.add("Range", {w.scalar_int(0), skv, w.scalar_int(1)});
    ir::ValueId allowed = w.add("LessOrEqual", {cols, w.add("Unsqueeze", {rows, w.ints({1})})});
    ir::ValueId c = w.add("Where", {allowed, zero, neg_inf});
    bias = bias == ir::kNoValue ? c : w.add("Add", {bias, c});
  }
  return bias;
}

Status expand(GraphWriter& w, std::span<const ops::TensorInfo> in) {
  const ir::Node& n = w.origin();
  if (present(n, 6)) return n.error(StatusCode::kUnsupported, "input nonpad_kv_seqlen is not supported");
  for (const char* key : {"left_window_size", "right_window_size"}) {
    SRT_ASSIGN_OR_RETURN(int64_t v, n.attr_int(key, -1));
    if (v != -1) return n.error(StatusCode::kUnsupported, std::string("attribute '") + key + "' is not supported");
  }
  if (n.inputs.size() < 3 || !present(n, 0) || !present(n, 1) || !present(n, 2))
    return n.error(StatusCode::kInvalidModel, "needs inputs Q, K and V");
  if (present(n, 4) != present(n, 5)) return n.error(StatusCode::kInvalidModel, "past_key and past_value go together");
  for (size_t i = 0; i < 3; ++i)
    if (!in[i].has_shape) return n.error(StatusCode::kUnsupported, "the rank of Q, K and V must be known");
  const size_t rank = in[0].dims.size();
  if ((rank != 3 && rank != 4) || in[1].dims.size() != rank || in[2].dims.size() != rank)
    return n.error(StatusCode::kInvalidModel, "Q, K and V must all be 3-D or all 4-D");
  if (present(n, 3) && !in[3].has_shape) return n.error(StatusCode::kUnsupported, "the rank of attn_mask must be known");
  SRT_ASSIGN_OR_RETURN(Heads h, head_counts(w, in, rank == 3));
  SRT_ASSIGN_OR_RETURN(int64_t is_causal, n.attr_int("is_causal", 0));
  SRT_ASSIGN_OR_RETURN(float softcap, n.attr_float("softcap", 0.f));
  SRT_ASSIGN_OR_RETURN(int64_t qk_mode, n.attr_int("qk_matmul_output_mode", 0));
  if (qk_mode < 0 || qk_mode > 3) return n.error(StatusCode::kInvalidModel, "qk_matmul_output_mode must be 0..3");
  if (!n.has_attr("scale") && h.head <= 0)
    return n.error(StatusCode::kUnsupported, "without a scale attribute the head size must be static");
  SRT_ASSIGN_OR_RETURN(float scale, n.attr_float("scale", h.head > 0 ? 1.f / std::sqrt(static_cast<float>(h.head)) : 1.f));

  ir::ValueId q = n.inputs[0], k = n.inputs[1], v = n.inputs[2];
  if (rank == 3) q = to_heads(w, q, h.q), k = to_heads(w, k, h.kv), v = to_heads(w, v, h.kv);
  const bool has_past = present(n, 4);
  // present = Concat(past, new) along the sequence; without a past, the new keys / values.
  auto with_past = [&](ir::ValueId x, size_t past_in, size_t present_out) {
    const bool out = wants(n, present_out);
    if (has_past) {
      GraphWriter::Attrs axis{{"axis", int_attr(2)}};
      if (!out) return w.add("Concat", {n.inputs[past_in], x}, axis);
      w.add_to("Concat", {n.inputs[past_in], x}, {n.outputs[present_out]}, axis);
    } else {
      if (!out) return x;
      w.add_to("Identity", {x}, {n.outputs[present_out]});
    }
    return n.outputs[present_out];
  };
  k = with_past(k, 4, 1);
  v = with_past(v, 5, 2);
  const ir::ValueId k_all = k;
  if (h.q != h.kv) k = repeat_heads(w, k, h.q / h.kv), v = repeat_heads(w, v, h.q / h.kv);

  const DataType t = in[0].dtype;
  SRT_ASSIGN_OR_RETURN(ir::ValueId scale_c, w.scalar(scale, t));
  ir::ValueId kt = w.add("Transpose", {k}, {{"perm", ints_attr({0, 1, 3, 2})}});
  ir::ValueId s = w.add("Mul", {w.add("MatMul", {q, kt}), scale_c});
  if (softcap > 0.f) {
    SRT_ASSIGN_OR_RETURN(ir::ValueId c, w.scalar(softcap, t));
    s = w.add("Mul", {w.add("Tanh", {w.add("Div", {s, c})}), c});
  }
  const ir::ValueId qk_raw = s;
  SRT_ASSIGN_OR_RETURN(const ir::ValueId bias, make_bias(w, in, q, k_all, is_causal != 0, has_past));
  if (bias != ir::kNoValue) s = w.add("Add", {s, bias});
  ir::ValueId p = w.add("Softmax", {s}, {{"axis", int_attr(-1)}});
  if (present(n, 3)) {  // a user mask may mask a whole row: its weights are 0, not NaN
    ir::ValueId row_max = w.add("ReduceMax", {bias, w.ints({-1})}, {{"keepdims", int_attr(1)}});
    SRT_ASSIGN_OR_RETURN(ir::ValueId neg_inf, w.scalar(kNegInf, t));
    SRT_ASSIGN_OR_RETURN(ir::ValueId zero, w.scalar(0.f, t));
    p = w.add("Where", {w.add("Equal", {row_max, neg_inf}), zero, p});
  }
  if (wants(n, 3)) w.add_to("Identity", {qk_mode == 3 ? p : qk_mode == 2 ? s : qk_raw}, {n.outputs[3]});
  if (rank == 4) {
    w.add_to("MatMul", {p, v}, {n.outputs[0]});
  } else {
    ir::ValueId y = w.add("Transpose", {w.add("MatMul", {p, v})}, {{"perm", ints_attr({0, 2, 1, 3})}});
    w.add_to("Reshape", {y, w.ints({0, 0, -1})}, {n.outputs[0]});
  }
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_FUNCTION_OP(Attention, {.op_type = "Attention", .domain = "", .min_opset = 23,
                                          .applies = is_onnx_form, .expand = expand});

}  // namespace streamrt::onnx_import
