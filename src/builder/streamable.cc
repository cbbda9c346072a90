#include "builder/streamable.h"

#include "ops/op.h"

namespace streamrt::builder {
namespace {

// True when input `k` of `step` is a weight operand of a weight-heavy op (its schema's
// streamable_inputs: MatMul's A, B and fused bias, Conv's W and B, Gather's table, ...).
bool heavy_operand(const ir::Node& step, size_t k) {
  const ops::OpSchema* s = ops::schema_of(step);
  return s && ops::lists_input(s->streamable_inputs, k);
}

}  // namespace

void mark_streamable_weights(plan::PlanData& plan, uint64_t min_bytes, BuildReport* report) {
  const size_t nw = plan.weights.size();
  std::vector<int> heavy_uses(nw, 0), other_uses(nw, 0);
  for (const ir::Node& step : plan.steps)
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      int32_t v = step.inputs[k];
      if (v < 0 || plan.values[v].kind != plan::ValueEntry::Kind::kWeight) continue;
      int32_t w = plan.values[v].weight_index;
      (heavy_operand(step, k) ? heavy_uses : other_uses)[w]++;
    }
  for (size_t w = 0; w < nw; ++w) {
    plan::WeightEntry& e = plan.weights[w];
    e.streamable = heavy_uses[w] > 0 && other_uses[w] == 0 && e.size >= min_bytes;
    if (e.streamable && report) {
      report->streamable_bytes += e.size;
      report->streamable_weights++;
    }
  }
}

}  // namespace streamrt::builder
