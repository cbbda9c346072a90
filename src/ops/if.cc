// If (opset 1, 11, 13, 16, 19, 21): runs then_branch or else_branch on cond's one bool element.
// Outputs may be sequences / optionals (opset 13 / 16; ops/sequence_value.h).
// Branch bodies read outer values as explicit captured inputs (ir/subgraph.h): node inputs
// [cond, captures...], each branch's inputs [captures...]. An If whose cond the builder knows is
// replaced by its branch (builder/inline_if.cc); the rest run on the host (ops/subgraph_exec.h).
#include "ops/common.h"
#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

Result<std::pair<const ir::Graph*, const ir::Graph*>> branches(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(const ir::Graph* then_g, node.attr_graph("then_branch"));
  SRT_ASSIGN_OR_RETURN(const ir::Graph* else_g, node.attr_graph("else_branch"));
  SRT_RETURN_IF_ERROR(check_body(node, *then_g, "then_branch", 1, 0, node.outputs.size()));
  SRT_RETURN_IF_ERROR(check_body(node, *else_g, "else_branch", 1, 0, node.outputs.size()));
  return std::make_pair(then_g, else_g);
}

Result<std::vector<Tensor>> run(const ir::Node& node, const std::vector<Tensor>& inputs) {
  SRT_ASSIGN_OR_RETURN(auto b, branches(node));
  SRT_ASSIGN_OR_RETURN(bool cond, read_cond(inputs[0], node, "cond"));
  std::vector<Tensor> caps(inputs.begin() + 1, inputs.end());
  auto outs = run_body(cond ? *b.first : *b.second, caps);
  if (!outs.ok()) return outs.status().with_context(node.describe() + (cond ? " then_branch" : " else_branch"));
  return outs;
}

Status verify(const InferContext& ctx) { return branches(ctx.node()).status(); }

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(auto b, branches(ctx.node()));
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kBools));
  const Dims& cd = ctx.input_dims(0);
  if (ctx.input(0).has_shape && dims_static(cd) && dims_numel(cd) != 1)
    return ctx.error("cond must hold one element, got " + dims_to_string(cd));
  SRT_ASSIGN_OR_RETURN(bool ran, infer_by_running(ctx, run));
  if (ran) return ok_status();
  std::vector<TensorInfo> caps;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) caps.push_back(ctx.input(i));
  std::optional<bool> known;
  if (const Tensor* c = ctx.input_value(0)) {
    SRT_ASSIGN_OR_RETURN(known, read_cond(*c, ctx.node(), "cond"));
  }
  std::vector<TensorInfo> then_out, else_out;
  if (!known || *known) {
    SRT_ASSIGN_OR_RETURN(then_out, infer_body(ctx.node(), *b.first, caps));
  }
  if (!known || !*known) {
    SRT_ASSIGN_OR_RETURN(else_out, infer_body(ctx.node(), *b.second, caps));
  }
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    TensorInfo out = !known ? merge_infos(then_out[k], else_out[k]) : *known ? then_out[k] : else_out[k];
    if (!known && then_out[k].dtype != else_out[k].dtype)
      return ctx.error("output " + std::to_string(k) + " is " + dtype_name(then_out[k].dtype) + " in then_branch, " +
                       dtype_name(else_out[k].dtype) + " in else_branch");
    ctx.set_output_info(k, std::move(out));
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) { return run_kernel(ctx, run); }

}  // namespace

STREAMRT_REGISTER_OP(If, {.op_type = "If", .infer = infer, .cpu = cpu, .verify = verify,
                          .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops
