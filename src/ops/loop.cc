// Loop (opset 1, 11, 13, 16, 19, 21); states may be sequences / optionals (opset 13+,
// ops/sequence_value.h), scan outputs are tensors. Node inputs [M, cond, v_initial x N, captures...], body inputs
// [iteration_num, cond, v x N, captures...], body outputs [cond, v x N, scan x K], node outputs
// [v_final x N, scan_outputs x K] (each scan output the K-th body output of every iteration,
// stacked along a new axis 0). As the spec says: with cond omitted the body's cond output is
// ignored (a for loop over M); with M omitted the loop runs while cond holds.
// Bound: a Loop stops with an error once it would start iteration kMaxLoopIterations (2^20):
// a model whose trip count is unbounded and whose cond never turns false must not hang the
// engine (or the builder, which runs loops over constants). Real exports run far fewer.
#include "ops/common.h"
#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

constexpr int64_t kMaxLoopIterations = int64_t{1} << 20;

struct Parts {
  const ir::Graph* body;
  size_t n;  // loop-carried states
  size_t k;  // scan outputs
};

Result<Parts> parts(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(const ir::Graph* body, node.attr_graph("body"));
  const size_t caps = static_cast<size_t>(std::max(0, body->num_captures));
  if (node.inputs.size() < 2 + caps)
    return node.error(StatusCode::kInvalidModel, "needs inputs M and cond (possibly omitted) before its " +
                                                     std::to_string(caps) + " captured values");
  const size_t n = node.inputs.size() - 2 - caps;
  if (node.outputs.size() < n)
    return node.error(StatusCode::kInvalidModel, "has " + std::to_string(node.outputs.size()) + " outputs for " +
                                                     std::to_string(n) + " loop-carried values");
  const size_t k = node.outputs.size() - n;
  SRT_RETURN_IF_ERROR(check_body(node, *body, "body", 2 + n, 2 + n, 1 + n + k));
  return Parts{body, n, k};
}

Tensor scalar_i64(int64_t v) { return Tensor::from_vector<int64_t>(DataType::kInt64, {}, {v}); }
Tensor scalar_bool(bool v) { return Tensor::from_vector<uint8_t>(DataType::kBool, {}, {static_cast<uint8_t>(v)}); }

Result<int64_t> trip_count(const Tensor& m, const ir::Node& node) {
  if (m.dtype() != DataType::kInt64 || m.numel() != 1)
    return node.error(StatusCode::kInvalidArgument,
                      "M must be one int64, got " + std::string(dtype_name(m.dtype())) + " " + dims_to_string(m.dims()));
  return *m.data_as<int64_t>();
}

// The body's inputs at iteration 0 as shape inference sees them: states keep dtype and dims only
// (they change from one iteration to the next), captures keep their contents.
std::vector<TensorInfo> body_infos(const std::vector<TensorInfo>& node_ins, const Parts& p) {
  std::vector<TensorInfo> ins(node_ins.size());
  ins[0] = TensorInfo{DataType::kInt64, {}, true, nullptr};
  ins[1] = TensorInfo{DataType::kBool, {}, true, nullptr};
  for (size_t i = 2; i < node_ins.size(); ++i) {
    ins[i] = node_ins[i];
    if (i < 2 + p.n) ins[i].value = nullptr;
    ins[i].partial = nullptr;
  }
  return ins;
}

// Scan outputs of a loop that ran no iteration: [0, body dims], unknown body dims taken as 0.
Result<std::vector<Tensor>> empty_scans(const ir::Node& node, const Parts& p, const std::vector<Tensor>& inputs) {
  std::vector<TensorInfo> node_ins(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].empty()) node_ins[i] = TensorInfo{inputs[i].dtype(), inputs[i].dims(), true, &inputs[i]};
  SRT_ASSIGN_OR_RETURN(auto outs, infer_body(node, *p.body, body_infos(node_ins, p)));
  std::vector<Tensor> scans;
  for (size_t k = 0; k < p.k; ++k) {
    Dims d = outs[1 + p.n + k].dims;
    for (int64_t& x : d) x = std::max<int64_t>(x, 0);
    d.insert(d.begin(), 0);
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(outs[1 + p.n + k].dtype, d));
    scans.push_back(std::move(t));
  }
  return scans;
}

Result<std::vector<Tensor>> run(const ir::Node& node, const std::vector<Tensor>& inputs) {
  SRT_ASSIGN_OR_RETURN(Parts p, parts(node));
  std::optional<int64_t> m;
  if (!inputs[0].empty()) {
    SRT_ASSIGN_OR_RETURN(m, trip_count(inputs[0], node));
  }
  const bool use_cond = !inputs[1].empty();
  bool cond = true;
  if (use_cond) {
    SRT_ASSIGN_OR_RETURN(cond, read_cond(inputs[1], node, "cond"));
  }
  std::vector<Tensor> body_in = inputs;  // [iter, cond, v..., captures...]
  std::vector<std::vector<Tensor>> scans(p.k);
  int64_t i = 0;
  for (; (!m || i < *m) && cond; ++i) {
    if (i >= kMaxLoopIterations)
      return node.error(StatusCode::kInvalidArgument,
                        "did not end within " + std::to_string(kMaxLoopIterations) +
                            " iterations (streamrt's limit; M is " + (m ? std::to_string(*m) : "omitted") +
                            (use_cond ? "" : " and cond omitted") + ")");
    body_in[0] = scalar_i64(i);
    body_in[1] = scalar_bool(cond);
    auto outs = run_body(*p.body, body_in);
    if (!outs.ok()) return outs.status().with_context(node.describe() + " iteration " + std::to_string(i));
    if (use_cond) {
      SRT_ASSIGN_OR_RETURN(cond, read_cond((*outs)[0], node, "the body's cond output"));
    }
    for (size_t s = 0; s < p.n; ++s) {
      Tensor& v = (*outs)[1 + s];
      if (v.dtype() != inputs[2 + s].dtype())
        return node.error(StatusCode::kInvalidArgument, "loop-carried value " + std::to_string(s) + " turned from " +
                                                            dtype_name(inputs[2 + s].dtype()) + " into " +
                                                            dtype_name(v.dtype()));
      body_in[2 + s] = std::move(v);
    }
    for (size_t k = 0; k < p.k; ++k) scans[k].push_back(std::move((*outs)[1 + p.n + k]));
  }
  std::vector<Tensor> result(body_in.begin() + 2, body_in.begin() + 2 + static_cast<std::ptrdiff_t>(p.n));
  if (i == 0 && p.k > 0) {
    SRT_ASSIGN_OR_RETURN(auto empty, empty_scans(node, p, inputs));
    for (Tensor& t : empty) result.push_back(std::move(t));
    return result;
  }
  for (size_t k = 0; k < p.k; ++k) {
    SRT_ASSIGN_OR_RETURN(Tensor t, stack_slices(scans[k], 0, DataType::kUndefined, {},
                                                node.describe() + " scan output " + std::to_string(k)));
    result.push_back(std::move(t));
  }
  return result;
}

Status verify(const InferContext& ctx) { return parts(ctx.node()).status(); }

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(Parts p, parts(ctx.node()));
  if (ctx.has_input(0)) SRT_RETURN_IF_ERROR(require_input(ctx, 0, kSignedInts));
  if (ctx.has_input(1)) SRT_RETURN_IF_ERROR(require_input(ctx, 1, kBools));
  SRT_ASSIGN_OR_RETURN(bool ran, infer_by_running(ctx, run));
  if (ran) return ok_status();
  std::vector<TensorInfo> node_ins(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) node_ins[i] = ctx.input(i);
  std::vector<TensorInfo> ins = body_infos(node_ins, p);
  // States whose shape changes from one iteration to the next end up with -1 in those dims: a
  // few rounds of inference reach that fixed point (each round only loosens dims).
  std::vector<TensorInfo> outs;
  for (int round = 0; round < 4; ++round) {
    SRT_ASSIGN_OR_RETURN(outs, infer_body(ctx.node(), *p.body, ins));
    bool changed = false;
    for (size_t s = 0; s < p.n; ++s) {
      if (outs[1 + s].dtype != ins[2 + s].dtype)
        return ctx.error("loop-carried value " + std::to_string(s) + " is " + dtype_name(ins[2 + s].dtype) +
                         " but the body makes " + dtype_name(outs[1 + s].dtype));
      TensorInfo merged = merge_infos(ins[2 + s], outs[1 + s]);
      // A state's type is the body's output type (an optional sequence state may become a sequence).
      merged.seq.kind = outs[1 + s].seq.kind;
      changed = changed || merged.has_shape != ins[2 + s].has_shape || merged.dims != ins[2 + s].dims ||
                merged.seq != ins[2 + s].seq;
      ins[2 + s] = merged;
    }
    if (!changed) break;
    if (round == 3)
      for (size_t s = 0; s < p.n; ++s) {
        if (ins[2 + s].seq.is_tensor()) {
          ins[2 + s] = TensorInfo{ins[2 + s].dtype, {}, false, nullptr};
        } else {  // a sequence / optional state: its byte length is unknown anyway, its tensors' dims now too
          ins[2 + s].seq.elem_has_shape = false;
          ins[2 + s].seq.elem_dims.clear();
        }
      }
  }
  for (size_t s = 0; s < p.n; ++s) ctx.set_output_info(s, ins[2 + s]);
  // A for loop over a known M runs exactly M times; otherwise the count is known at run time.
  int64_t count = kDynamicDim;
  if (!ctx.has_input(1) && ctx.input_value(0)) {
    SRT_ASSIGN_OR_RETURN(count, trip_count(*ctx.input_value(0), ctx.node()));
    count = std::clamp<int64_t>(count, 0, kMaxLoopIterations);
  }
  for (size_t k = 0; k < p.k; ++k) {
    const TensorInfo& o = outs[1 + p.n + k];
    if (!o.has_shape) {
      ctx.set_output_unranked(p.n + k, o.dtype);
      continue;
    }
    Dims d = o.dims;
    d.insert(d.begin(), count);
    ctx.set_output(p.n + k, o.dtype, std::move(d));
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) { return run_kernel(ctx, run); }

}  // namespace

STREAMRT_REGISTER_OP(Loop, {.op_type = "Loop", .infer = infer, .cpu = cpu, .verify = verify, .cpu_dtypes = kAnyDType,
                            .dtype_input = -1});

}  // namespace streamrt::ops
