#include "onnx/functions/function_op.h"

#include "core/float16.h"
#include "ir/shape_inference.h"

namespace streamrt::onnx_import {

FunctionOpRegistry& FunctionOpRegistry::global() {
  static FunctionOpRegistry r;
  return r;
}

const FunctionOp* FunctionOpRegistry::find(const ir::Node& n) const {
  for (const FunctionOp& op : ops_)
    if (op.op_type == n.op_type && op.domain == n.domain && n.opset >= op.min_opset && op.applies(n)) return &op;
  return nullptr;
}

ir::ValueId GraphWriter::fresh() {
  for (;;) {
    std::string name = origin_.name + "/" + std::to_string(next_++);
    if (g_.find_value(name) == ir::kNoValue) return g_.add_value(name);
  }
}

void GraphWriter::add_to(const std::string& op, std::vector<ir::ValueId> inputs, std::vector<ir::ValueId> outputs,
                         Attrs attrs) {
  ir::Node n;
  n.name = origin_.name + "/" + op + "_" + std::to_string(nodes_.size());
  n.op_type = op;
  n.domain = "";
  n.opset = origin_.opset;  // function ops are ai.onnx ops: their bodies use the same opset
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  nodes_.push_back(std::move(n));
}

ir::ValueId GraphWriter::add(const std::string& op, std::vector<ir::ValueId> inputs, Attrs attrs) {
  ir::ValueId out = fresh();
  add_to(op, std::move(inputs), {out}, std::move(attrs));
  return out;
}

ir::ValueId GraphWriter::ints(const std::vector<int64_t>& v) {
  ir::ValueId id = fresh();
  g_.set_constant(id, Tensor::from_vector(DataType::kInt64, {static_cast<int64_t>(v.size())}, v));
  return id;
}

ir::ValueId GraphWriter::scalar_int(int64_t v) {
  ir::ValueId id = fresh();
  g_.set_constant(id, Tensor::from_vector(DataType::kInt64, {}, std::vector<int64_t>{v}));
  return id;
}

Result<ir::ValueId> GraphWriter::scalar(float v, DataType t) {
  Tensor c;
  switch (t) {
    case DataType::kFloat32: c = Tensor::from_vector(DataType::kFloat32, {}, std::vector<float>{v}); break;
    case DataType::kFloat64: c = Tensor::from_vector(DataType::kFloat64, {}, std::vector<double>{v}); break;
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      uint16_t bits = 0;
      if (t == DataType::kFloat16) floats_to_half(&v, &bits, 1);
      else floats_to_bfloat16(&v, &bits, 1);
      c = Tensor::from_vector(t, {}, std::vector<uint16_t>{bits});
      break;
    }
    default:
      return origin_.error(StatusCode::kUnsupported, std::string("needs a float type, got ") + dtype_name(t));
  }
  ir::ValueId id = fresh();
  g_.set_constant(id, std::move(c));
  return id;
}

namespace {

// Index of the first node an expansion applies to at or after `from`, or nodes.size().
size_t next_target(const ir::Graph& g, size_t from) {
  for (size_t i = from; i < g.nodes.size(); ++i)
    if (FunctionOpRegistry::global().find(g.nodes[i])) return i;
  return g.nodes.size();
}

}  // namespace

Status expand_function_ops(ir::Graph& g) {
  size_t target = next_target(g, 0);
  if (target == g.nodes.size()) return ok_status();
  const Status stop = internal_error("stop at the node to expand");
  while (target < g.nodes.size()) {
    // Shape inference up to the target gives its inputs' ranks and dims.
    std::vector<ops::TensorInfo> infos;
    ir::InferOptions opts;
    opts.before_node = [&](size_t i, const ops::InferContext& ctx) {
      if (i != target) return ok_status();
      for (size_t k = 0; k < ctx.num_inputs(); ++k) infos.push_back(ctx.input(k));
      for (auto& info : infos) info.value = nullptr, info.partial = nullptr;  // owned by the pass
      return stop;
    };
    auto r = ir::infer_shapes_readonly(g, opts);
    if (r.ok() || infos.size() != g.nodes[target].inputs.size()) {
      // Inference failed before the target (an unsupported or broken node upstream): leave the rest
      // for the importer's report.
      return ok_status();
    }
    const ir::Node origin = g.nodes[target];
    GraphWriter w(g, origin);
    const FunctionOp* op = FunctionOpRegistry::global().find(origin);
    SRT_RETURN_IF_ERROR(op->expand(w, infos));
    std::vector<ir::Node> body = w.take();
    const size_t n = body.size();
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(target));
    g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(target), std::make_move_iterator(body.begin()),
                   std::make_move_iterator(body.end()));
    target = next_target(g, target + n);
  }
  return g.topo_sort();
}

}  // namespace streamrt::onnx_import
