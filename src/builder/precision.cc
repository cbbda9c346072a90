#include "builder/precision.h"
#include "builder/progress.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>
#include <vector>

#include "core/float16.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "ops/sequence_value.h"

namespace streamrt::builder {
namespace {

constexpr float kHalfMax = 65504.f;
constexpr float kBFloat16Max = 3.38953139e38f;  // 0x7F7F

Result<Tensor> convert_tensor(const Tensor& t, DataType target) {
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(target, t.dims()));
  const float* src = t.data_as<float>();
  uint16_t* dst = out.mutable_data_as<uint16_t>();
  const size_t n = static_cast<size_t>(t.numel());
  // Finite values beyond the target's range saturate at its largest finite value instead of
  // rounding to +-inf (as TensorRT's and onnxconverter's float16 conversions do): exporters fill
  // attention masks with float32's lowest value, which rounds to -inf even in bfloat16, and -inf
  // turns a fully masked softmax row into NaN where float32 gives a uniform row.
  const float limit = target == DataType::kFloat16 ? kHalfMax : kBFloat16Max;
  std::vector<float> saturated(src, src + n);
  for (float& v : saturated)
    if (std::isfinite(v)) v = std::clamp(v, -limit, limit);
  src = saturated.data();
  if (target == DataType::kFloat16) floats_to_half(src, dst, n);
  else floats_to_bfloat16(src, dst, n);
  return out;
}

// A constant sequence (or optional) of float32 tensors, as folding encodes it (a SequenceEmpty or
// SplitToSequence of constants): its elements and element type follow the new precision, so the
// tensors a converted graph inserts can join it.
Status convert_sequence_constant(ir::Graph& g, ir::ValueId id, DataType target) {
  ir::Value& v = g.value(id);
  if (v.seq.is_tensor() || v.seq.elem_dtype != DataType::kFloat32) return ok_status();
  SRT_ASSIGN_OR_RETURN(ops::SeqValue sv, ops::decode_seq(*g.constant(id), "constant '" + v.name + "'"));
  for (Tensor& t : sv.items)
    if (t.dtype() == DataType::kFloat32) {
      SRT_ASSIGN_OR_RETURN(t, convert_tensor(t, target));
    }
  sv.elem_dtype = target;
  SRT_ASSIGN_OR_RETURN(Tensor blob, ops::encode_seq(sv));
  g.set_constant(id, std::move(blob));
  g.value(id).seq.elem_dtype = target;
  return ok_status();
}

Status convert_sequence_constants(ir::Graph& g, DataType target) {
  std::vector<ir::ValueId> ids;
  for (const auto& [id, t] : g.constants) ids.push_back(id);
  for (ir::ValueId id : ids) SRT_RETURN_IF_ERROR(convert_sequence_constant(g, id, target));
  return ok_status();
}

ir::Node make_cast(const std::string& name, ir::ValueId in, ir::ValueId out, DataType to) {
  ir::Node n;
  n.name = name;
  n.op_type = "Cast";
  n.opset = 13;
  n.inputs = {in};
  n.outputs = {out};
  n.attrs["to"] = ir::Attribute::make_int(onnx_import::dtype_to_onnx(to));
  return n;
}

Status convert_attributes(ir::Node& n, DataType target);

// A body (If / Loop / Scan) follows the graph around it: its float32 constants and attributes
// change as the graph's do; its inputs take whatever types the node feeds them at run time.
Result<std::shared_ptr<const ir::Graph>> convert_body(const ir::Graph& body, DataType target) {
  auto g = std::make_shared<ir::Graph>(body);
  for (auto& [id, t] : g->constants)
    if (t.dtype() == DataType::kFloat32) {
      SRT_ASSIGN_OR_RETURN(Tensor c, convert_tensor(t, target));
      g->set_constant(id, std::move(c));
    }
  SRT_RETURN_IF_ERROR(convert_sequence_constants(*g, target));
  for (ir::Value& v : g->values) {
    if (v.dtype == DataType::kFloat32) v.dtype = target;
    if (v.seq.elem_dtype == DataType::kFloat32) v.seq.elem_dtype = target;  // a carried sequence of floats
  }
  for (auto& n : g->nodes) SRT_RETURN_IF_ERROR(convert_attributes(n, target));
  return std::shared_ptr<const ir::Graph>(std::move(g));
}

// Attributes that name or hold float32 follow the new precision.
Status convert_attributes(ir::Node& n, DataType target) {
  const int onnx_float = onnx_import::dtype_to_onnx(DataType::kFloat32);
  // The attribute naming the output's element type, when the op has one (Cast's `to`, ...; an
  // omitted one defaults to the input's type).
  const ops::OpSchema* schema = ops::schema_of(n);
  if (schema && schema->output_dtype_attr) {
    auto it = n.attrs.find(schema->output_dtype_attr);
    if (it != n.attrs.end() && it->second.kind == ir::Attribute::Kind::kInt && it->second.i == onnx_float)
      it->second.i = onnx_import::dtype_to_onnx(target);
    else if (it == n.attrs.end() && schema->output_dtype_defaults_to_float)
      n.attrs[schema->output_dtype_attr] = ir::Attribute::make_int(onnx_import::dtype_to_onnx(target));
  }
  if (schema && schema->output_value_attr) {
    auto it = n.attrs.find(schema->output_value_attr);
    if (it == n.attrs.end() && schema->output_value_defaults_to_float_zero) {
      const Tensor zero = Tensor::from_vector(DataType::kFloat32, {1}, std::vector<float>{0.f});
      SRT_ASSIGN_OR_RETURN(Tensor converted, convert_tensor(zero, target));
      n.attrs[schema->output_value_attr] = ir::Attribute::make_tensor(std::move(converted));
    } else if (it != n.attrs.end() && it->second.kind == ir::Attribute::Kind::kTensor &&
               it->second.t.dtype() == DataType::kFloat32) {
      SRT_ASSIGN_OR_RETURN(it->second.t, convert_tensor(it->second.t, target));
    }
  }
  for (auto& [name, a] : n.attrs)
    if (a.kind == ir::Attribute::Kind::kGraph && a.g) {
      SRT_ASSIGN_OR_RETURN(a.g, convert_body(*a.g, target));
    }
  return ok_status();
}

}  // namespace

Status convert_precision(ir::Graph& g, DataType target, const BuilderConfig& config) {
  if (target != DataType::kFloat16 && target != DataType::kBFloat16)
    return invalid_argument(std::string("reduced precision must be float16 or bfloat16, not ") + dtype_name(target));
  uint64_t bytes = 0;  // progress by bytes converted: one large embedding is most of the work
  for (const auto& [id, t] : g.constants)
    if (t.dtype() == DataType::kFloat32) bytes += static_cast<uint64_t>(t.nbytes());
  PhaseProgress progress(config, target == DataType::kFloat16 ? "weights to fp16" : "weights to bf16", bytes);
  for (auto& [id, t] : g.constants)
    if (t.dtype() == DataType::kFloat32) {
      const uint64_t n = static_cast<uint64_t>(t.nbytes());
      SRT_ASSIGN_OR_RETURN(Tensor c, convert_tensor(t, target));
      g.set_constant(id, std::move(c));
      progress.advance(n);
    }
  SRT_RETURN_IF_ERROR(convert_sequence_constants(g, target));
  for (auto& n : g.nodes) SRT_RETURN_IF_ERROR(convert_attributes(n, target));

  // Inputs: x (float32) -> Cast -> x_half, which every node reads instead.
  std::vector<ir::Node> head;
  std::unordered_map<ir::ValueId, ir::ValueId> replace;
  for (ir::ValueId in : g.inputs) {
    if (g.value(in).dtype != DataType::kFloat32) continue;
    ir::ValueId h = g.add_value(g.value(in).name + "::" + dtype_name(target));
    head.push_back(make_cast("input_cast_" + g.value(in).name, in, h, target));
    replace[in] = h;
  }
  for (auto& n : g.nodes)
    for (auto& v : n.inputs)
      if (auto it = replace.find(v); it != replace.end()) v = it->second;
  // Outputs: the producer writes y_half; Cast(y_half) -> y (float32).
  std::unordered_set<ir::ValueId> inputs(g.inputs.begin(), g.inputs.end());
  std::vector<ir::Node> tail;
  for (ir::ValueId out : g.outputs) {
    if (g.value(out).dtype != DataType::kFloat32 || g.is_constant(out) || inputs.count(out)) continue;
    ir::ValueId h = g.add_value(g.value(out).name + "::" + dtype_name(target));
    for (auto& n : g.nodes) {
      for (auto& v : n.outputs)
        if (v == out) v = h;
      for (auto& v : n.inputs)
        if (v == out) v = h;
    }
    tail.push_back(make_cast("output_cast_" + g.value(out).name, h, out, DataType::kFloat32));
  }
  head.insert(head.end(), std::make_move_iterator(g.nodes.begin()), std::make_move_iterator(g.nodes.end()));
  head.insert(head.end(), std::make_move_iterator(tail.begin()), std::make_move_iterator(tail.end()));
  g.nodes = std::move(head);
  return ok_status();
}

}  // namespace streamrt::builder
