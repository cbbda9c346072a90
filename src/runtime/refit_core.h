// Refit building blocks shared by the Refitter (streamrt/refit.h) and the engine cache: which
// weights are structure, whether a model's optimized graph has a plan's structure, and the
// model's values for the plan's weights.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"
#include "streamrt/builder.h"

namespace streamrt::refit {

// Per plan weight: some step reads it as a shape (OpSchema::shape_inputs), so its value is part
// of the engine's structure.
std::vector<bool> shape_weights(const plan::PlanData& p);

// OK when `g` (builder::prepare_graph's result) lowers to the structure of `p`: the same steps
// (op, domain, opset, attributes, edges by value name, value dtypes and dims), I/O and weights
// (names, dtypes, dims). kInvalidArgument naming the first difference; `source` names the model.
Status check_structure(const plan::PlanData& p, const ir::Graph& g, const std::string& source);

// The graph's constants for the plan's weights, in plan order (sharing the graph's storage).
// kInvalidArgument naming a weight the graph lacks or has with another dtype or dims.
Result<std::vector<Tensor>> weights_from_graph(const plan::PlanData& p, const ir::Graph& g, const std::string& source);

// Weight-only quantization (ops/weight_quant.h): a weight of the model that the plan stores
// compressed is no plan weight; the WeightOnlyMatMul steps that read it name it (__source). Its
// new value, quantized as the build did, for every plan weight made from it (the packed codes,
// scales and zero points of each step or chunk step). kNotFound when no step names `name`;
// kInvalidArgument when the value's dtype or dims are not the original weight's; kUnsupported
// for the codes of a weight the model stored quantized (builder/import_quantized.h).
Result<std::map<int32_t, Tensor>> quantize_source_weight(const plan::PlanData& p, const std::string& name,
                                                          const Tensor& value);

// A configuration that prepares a model the way `p` was built: its inputs' shapes and profiles,
// its device (or the CPU when that backend cannot be used here: the passes do not depend on it)
// and `precision`.
BuilderConfig config_from_plan(const plan::PlanData& p, DataType precision);

// Imports and prepares `onnx_path` like `p` (float32 first, then the reduced precisions whose
// dtypes the plan holds), checks its structure and returns its values for p's weights.
Result<std::vector<Tensor>> weights_from_onnx(const plan::PlanData& p, const std::string& onnx_path);

// Sets p.weight_data[i] = value for every staged (i, value), and `graph`'s constants for the
// values of those weights when given; clears p.weights_stripped once every weight has a value.
// Then runs `hook` on the changed indices; if it fails, everything is restored (and the hook run
// again on the old values) and its Status returned.
using RefitHook = std::function<Status(const std::vector<int32_t>& changed)>;
Status apply_weights(plan::PlanData& p, ir::Graph* graph, const std::map<int32_t, Tensor>& staged,
                     const RefitHook& hook);

}  // namespace streamrt::refit
