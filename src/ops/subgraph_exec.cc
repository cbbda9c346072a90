#include "ops/subgraph_exec.h"

#include <xxhash.h>

#include <cstring>

namespace streamrt::ops {
namespace {

// The kernel's share of what the shape rule computed (see the header).
struct Memo {
  const ir::Node* node = nullptr;
  std::vector<uint64_t> keys;
  std::vector<Tensor> outputs;
};
thread_local Memo memo;

uint64_t input_key(DataType dtype, const Dims& dims, const void* data) {
  uint64_t h = XXH3_64bits_withSeed(dims.data(), dims.size() * sizeof(int64_t), static_cast<uint64_t>(dtype) + 1);
  if (dtype == DataType::kUndefined) return h;
  const size_t bytes = static_cast<size_t>(dims_numel(dims)) * dtype_size(dtype);
  return bytes && data ? XXH3_64bits_withSeed(data, bytes, h) : h;
}

std::vector<uint64_t> input_keys(const std::vector<Tensor>& ins) {
  std::vector<uint64_t> keys;
  keys.reserve(ins.size());
  for (const Tensor& t : ins) keys.push_back(input_key(t.dtype(), t.empty() ? Dims{} : t.dims(), t.data()));
  return keys;
}

}  // namespace

Result<std::vector<Tensor>> run_body(const ir::Graph& body, const std::vector<Tensor>& inputs) {
  if (inputs.size() != body.inputs.size())
    return internal_error("subgraph '" + body.name + "' takes " + std::to_string(body.inputs.size()) + " inputs, got " +
                          std::to_string(inputs.size()));
  const size_t nv = body.values.size();
  std::vector<Tensor> env(nv);
  // Reads left per value: a tensor is let go after its last reader (outputs count as one more).
  std::vector<int64_t> reads(nv, 0);
  for (const ir::Node& n : body.nodes)
    for (ir::ValueId id : n.inputs)
      if (id != ir::kNoValue) ++reads[id];
  for (ir::ValueId id : body.outputs) ++reads[id];
  for (const auto& [id, t] : body.constants) env[id] = t;
  for (size_t i = 0; i < inputs.size(); ++i) env[body.inputs[i]] = inputs[i];
  for (const ir::Node& n : body.nodes) {
    std::vector<Tensor> ins(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ir::ValueId id = n.inputs[k];
      if (id == ir::kNoValue) continue;
      if (env[id].empty())
        return n.error(StatusCode::kInvalidArgument, "input '" + body.value(id).name + "' has no value");
      ins[k] = env[id];
    }
    SRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, evaluate_on_host(n, ins));
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != ir::kNoValue) env[n.outputs[k]] = std::move(outs[k]);
    for (ir::ValueId id : n.inputs)
      if (id != ir::kNoValue && --reads[id] == 0) env[id] = Tensor();
  }
  std::vector<Tensor> out;
  out.reserve(body.outputs.size());
  for (ir::ValueId id : body.outputs) {
    if (env[id].empty()) return invalid_argument("subgraph '" + body.name + "' output '" + body.value(id).name + "' has no value");
    out.push_back(env[id]);
  }
  return out;
}

Result<std::vector<TensorInfo>> infer_body(const ir::Node& node, const ir::Graph& body,
                                           const std::vector<TensorInfo>& inputs) {
  if (inputs.size() != body.inputs.size())
    return node.error(StatusCode::kInternal, "a body of " + std::to_string(body.inputs.size()) + " inputs got " +
                                                 std::to_string(inputs.size()));
  ir::Graph g = body;  // shallow: nodes, names and constants (shared bytes)
  ir::InferOptions opts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ir::Value& v = g.value(body.inputs[i]);
    v.dtype = inputs[i].dtype;
    v.dims = inputs[i].dims;
    v.has_shape = inputs[i].has_shape;
    // What the body declares a sequence / optional stays one when the caller knows only bytes.
    if (!inputs[i].seq.is_tensor() || v.seq.is_tensor()) v.seq = inputs[i].seq;
    if (inputs[i].value) opts.known_values[body.inputs[i]] = *inputs[i].value;
  }
  auto r = ir::infer_shapes_readonly(g, opts);
  if (!r.ok()) return r.status().with_context(node.describe() + " body '" + body.name + "'");
  std::vector<TensorInfo> out;
  for (ir::ValueId id : body.outputs) {
    TensorInfo info = r->infos[id];
    info.value = nullptr;
    info.partial = nullptr;
    if (info.dtype == DataType::kUndefined)
      return node.error(StatusCode::kInvalidModel,
                        "body '" + body.name + "' output '" + body.value(id).name + "' has no known data type");
    out.push_back(std::move(info));
  }
  return out;
}

Result<bool> infer_by_running(InferContext& ctx, RunFn run) {
  std::vector<Tensor> ins(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor* v = ctx.input_value(i);
    if (!v) return false;
    ins[i] = *v;
  }
  SRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run(ctx.node(), ins));
  if (outs.size() != ctx.num_outputs())
    return ctx.node().error(StatusCode::kInternal, "made " + std::to_string(outs.size()) + " outputs for " +
                                                       std::to_string(ctx.num_outputs()));
  for (size_t k = 0; k < outs.size(); ++k) {
    ctx.set_output(k, outs[k].dtype(), outs[k].dims());
    ctx.set_output_value(k, outs[k]);
  }
  memo = Memo{&ctx.node(), input_keys(ins), std::move(outs)};
  return true;
}

Status run_kernel(KernelContext& ctx, RunFn run) {
  std::vector<Tensor> ins(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins[i] = Tensor::view(ctx.input(i).dtype, ctx.input(i).dims, ctx.input(i).data, nullptr);
  std::vector<Tensor> outs;
  if (memo.node == &ctx.node() && memo.keys == input_keys(ins)) {
    outs = std::move(memo.outputs);
  } else {
    SRT_ASSIGN_OR_RETURN(outs, run(ctx.node(), ins));
  }
  memo = Memo{};
  if (outs.size() != ctx.num_outputs())
    return ctx.node().error(StatusCode::kInternal, "made " + std::to_string(outs.size()) + " outputs for " +
                                                       std::to_string(ctx.num_outputs()));
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!ctx.has_output(k)) continue;
    const TensorRef& y = ctx.output(k);
    if (y.dtype != outs[k].dtype() || y.dims != outs[k].dims())
      return ctx.error("output " + std::to_string(k) + " is " + dtype_name(outs[k].dtype()) + " " +
                       dims_to_string(outs[k].dims()) + ", its memory was sized for " + dtype_name(y.dtype) + " " +
                       dims_to_string(y.dims));
    if (y.nbytes()) std::memcpy(y.data, outs[k].data(), y.nbytes());
  }
  return ok_status();
}

namespace {
// Dims -1 where a and b differ, nullopt when their ranks do (or either is unknown).
std::optional<Dims> merge_dims(const Dims& a, bool a_known, const Dims& b, bool b_known) {
  if (!a_known || !b_known || a.size() != b.size()) return std::nullopt;
  Dims r = a;
  for (size_t d = 0; d < r.size(); ++d)
    if (a[d] != b[d]) r[d] = kDynamicDim;
  return r;
}
}  // namespace

TensorInfo merge_infos(const TensorInfo& a, const TensorInfo& b) {
  TensorInfo r{a.dtype, a.dims, a.has_shape && b.has_shape, nullptr, nullptr, a.seq};
  if (!a.seq.is_tensor() && !b.seq.is_tensor()) {  // a sequence / optional: merge what its tensors are
    auto d = merge_dims(a.seq.elem_dims, a.seq.elem_has_shape, b.seq.elem_dims, b.seq.elem_has_shape);
    r.seq.elem_has_shape = d.has_value();
    r.seq.elem_dims = d ? *d : Dims{};
  }
  if (!r.has_shape || a.dims.size() != b.dims.size()) {
    r.has_shape = false;
    r.dims.clear();
    return r;
  }
  for (size_t d = 0; d < r.dims.size(); ++d)
    if (a.dims[d] != b.dims[d]) r.dims[d] = kDynamicDim;
  return r;
}

Result<Tensor> take_slice(const Tensor& t, int64_t axis, int64_t index) {
  const Dims& d = t.dims();
  if (axis < 0 || axis >= static_cast<int64_t>(d.size()) || index < 0 || index >= d[axis])
    return internal_error("slice " + std::to_string(index) + " of axis " + std::to_string(axis) + " of " +
                          dims_to_string(d) + " is out of range");
  Dims out_dims = d;
  out_dims.erase(out_dims.begin() + axis);
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(t.dtype(), out_dims));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int64_t k = 0; k < axis; ++k) outer *= d[k];
  for (size_t k = static_cast<size_t>(axis) + 1; k < d.size(); ++k) inner *= d[k];
  const auto* src = static_cast<const uint8_t*>(t.data());
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  for (int64_t o = 0; o < outer && inner > 0; ++o)
    std::memcpy(dst + o * inner, src + (o * d[axis] + index) * inner, static_cast<size_t>(inner));
  return out;
}

Result<Tensor> stack_slices(const std::vector<Tensor>& parts, int64_t axis, DataType empty_dtype,
                            const Dims& empty_dims, const std::string& what) {
  const DataType dtype = parts.empty() ? empty_dtype : parts[0].dtype();
  Dims elem = parts.empty() ? empty_dims : parts[0].dims();
  if (axis < 0 || axis > static_cast<int64_t>(elem.size()))
    return invalid_argument(what + ": axis " + std::to_string(axis) + " is outside [0, " +
                            std::to_string(elem.size()) + "] for slices of " + dims_to_string(elem));
  for (size_t i = 1; i < parts.size(); ++i)
    if (parts[i].dtype() != dtype || parts[i].dims() != elem)
      return invalid_argument(what + ": iteration " + std::to_string(i) + " made " + dtype_name(parts[i].dtype()) + " " +
                              dims_to_string(parts[i].dims()) + ", earlier ones " + dtype_name(dtype) + " " +
                              dims_to_string(elem) + " (scan outputs must keep their shape)");
  const int64_t n = static_cast<int64_t>(parts.size());
  Dims out_dims = elem;
  out_dims.insert(out_dims.begin() + axis, n);
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(dtype, out_dims));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t k = 0; k < axis; ++k) outer *= elem[k];
  for (size_t k = static_cast<size_t>(axis); k < elem.size(); ++k) inner *= elem[k];
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  for (int64_t i = 0; i < n && inner > 0; ++i) {
    const auto* src = static_cast<const uint8_t*>(parts[i].data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * n + i) * inner, src + o * inner, static_cast<size_t>(inner));
  }
  return out;
}

Result<bool> read_cond(const Tensor& t, const ir::Node& node, const char* what) {
  if (t.dtype() != DataType::kBool || t.numel() != 1)
    return node.error(StatusCode::kInvalidArgument, std::string(what) + " must be one bool, got " +
                                                        dtype_name(t.dtype()) + " " + dims_to_string(t.dims()));
  return *t.data_as<bool>();
}

Status check_body(const ir::Node& node, const ir::Graph& body, const char* attr, size_t node_formal,
                  size_t body_formal, size_t outputs) {
  const size_t caps = body.num_captures < 0 ? 0 : static_cast<size_t>(body.num_captures);
  if (node.inputs.size() != node_formal + caps || body.inputs.size() != body_formal + caps ||
      body.outputs.size() != outputs)
    return node.error(StatusCode::kInvalidModel,
                      std::string("attribute '") + attr + "': the body has " + std::to_string(body.inputs.size()) +
                          " inputs (" + std::to_string(caps) + " captured) and " + std::to_string(body.outputs.size()) +
                          " outputs; the node, with " + std::to_string(node.inputs.size()) + " inputs and " +
                          std::to_string(node.outputs.size()) + " outputs, needs " + std::to_string(body_formal + caps) +
                          " and " + std::to_string(outputs));
  return ok_status();
}

}  // namespace streamrt::ops
