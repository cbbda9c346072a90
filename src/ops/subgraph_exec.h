// Running and inferring the bodies of If / Loop / Scan (ir/subgraph.h says how a body binds to
// its node). A small host interpreter: each body node runs through evaluate_on_host, i.e. its
// op's shape rule and CPU kernel, exactly as constant folding runs them. On CUDA these ops have
// no kernel of their own and run as host steps.
//
// Output sizes. What a body makes can depend on the data (If's branch, Loop's trip count), so the
// three ops size their outputs the way NonZero does: once every input's contents are known (at run
// time the engines hand a host step's shape rule all of them; at build time only constants), the
// shape rule runs the body and publishes the exact dims and values; the kernel that follows takes
// those results instead of running the body twice (a one-entry memo per thread, keyed by the node
// and a hash of its inputs' dtype, dims and bytes). Otherwise the rule infers the body's shapes and
// leaves unknown dims -1 (sized at run time, as any data-dependent activation).
#pragma once

#include <vector>

#include "ir/shape_inference.h"
#include "ops/op.h"

namespace streamrt::ops {

// Runs `body` with inputs[i] bound to body.inputs[i]; returns the body's outputs.
Result<std::vector<Tensor>> run_body(const ir::Graph& body, const std::vector<Tensor>& inputs);

// Shape inference of `body` with inputs[i] describing body.inputs[i] (dtype, dims, contents when
// known). Returns what it infers for each body output (values dropped). Errors name `node`.
Result<std::vector<TensorInfo>> infer_body(const ir::Node& node, const ir::Graph& body,
                                           const std::vector<TensorInfo>& inputs);

// What If / Loop / Scan compute from all their inputs (absent optional ones empty).
using RunFn = Result<std::vector<Tensor>> (*)(const ir::Node& node, const std::vector<Tensor>& inputs);
// When every present input of ctx has known contents: runs `run`, sets each output's dtype, dims
// and value, keeps the results for run_kernel, and returns true. Else false, nothing done.
Result<bool> infer_by_running(InferContext& ctx, RunFn run);
// The op's kernel: the results infer_by_running kept for these very inputs, else `run`; copied
// into the outputs (dims checked against the memory the engine sized).
Status run_kernel(KernelContext& ctx, RunFn run);

// One dtype / shape for two descriptions of a value (branches of an If, a loop state before and
// after an iteration): dims -1 where they differ, unranked when the ranks do. Contents dropped.
TensorInfo merge_infos(const TensorInfo& a, const TensorInfo& b);
// `t` with dimension `axis` removed, at position `index` along it.
Result<Tensor> take_slice(const Tensor& t, int64_t axis, int64_t index);
// parts (equal dtype and dims) stacked along a new dimension `axis` (0..rank); with no parts the
// result has dims `empty_dims` with 0 inserted at `axis`.
Result<Tensor> stack_slices(const std::vector<Tensor>& parts, int64_t axis, DataType empty_dtype,
                            const Dims& empty_dims, const std::string& what);
// A bool tensor of one element as a bool (Loop's / If's cond).
Result<bool> read_cond(const Tensor& t, const ir::Node& node, const char* what);
// kInvalidModel unless node attribute `attr`'s body fits the node: the node has `node_formal`
// inputs before the captures, the body `body_formal`, and the body has `outputs` outputs.
Status check_body(const ir::Node& node, const ir::Graph& body, const char* attr, size_t node_formal,
                  size_t body_formal, size_t outputs);

}  // namespace streamrt::ops
