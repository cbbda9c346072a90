#include "backends/cuda/cuda_engine.h"

namespace streamrt::cuda {

CudaEngineState::~CudaEngineState() {
  if (weights) cudaFree(weights);
}

namespace {
// Shape and Size read only their input's dims, never its contents.
bool reads_dims_only(const ir::Node& step, size_t input) {
  return input == 0 && step.domain.empty() && (step.op_type == "Shape" || step.op_type == "Size");
}
}  // namespace

void place_steps(const EngineState& es, CudaEngineState& ces, std::vector<std::string>* fallbacks) {
  const plan::PlanData& p = es.plan.data;
  const size_t ns = p.steps.size();
  std::vector<uint8_t> shape_value(p.values.size(), 0);
  ces.host_step.assign(ns, 0);
  ces.kernels.assign(ns, nullptr);
  // Backwards: a value read as a shape makes its producer a host step, and that step's
  // inputs shape values in turn.
  for (size_t s = ns; s-- > 0;) {
    const ir::Node& step = p.steps[s];
    for (int k : es.schemas[s]->shape_inputs)
      if (k < static_cast<int>(step.inputs.size()) && step.inputs[k] >= 0) shape_value[step.inputs[k]] = 1;
    bool host = false;
    for (int32_t out : step.outputs)
      if (out >= 0 && shape_value[out]) host = true;
    if (!host) continue;
    ces.host_step[s] = 1;
    for (size_t k = 0; k < step.inputs.size(); ++k)
      if (step.inputs[k] >= 0 && !reads_dims_only(step, k)) shape_value[step.inputs[k]] = 1;
  }
  for (size_t s = 0; s < ns; ++s) {
    if (ces.host_step[s]) continue;
    const ir::Node& step = p.steps[s];
    ces.kernels[s] = step.domain.empty() ? CudaKernelRegistry::global().find(step.op_type) : nullptr;
    if (!ces.kernels[s]) {
      ces.host_step[s] = 1;
      if (fallbacks) fallbacks->push_back(step.op_type + " (" + step.name + ")");
    }
  }
}

Status upload_weights(const EngineState& es, CudaEngineState& ces) {
  const plan::PlanData& p = es.plan.data;
  ces.weight_offsets.resize(p.weights.size());
  uint64_t total = 0;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    ces.weight_offsets[i] = total;
    total += (p.weights[i].size + 255) / 256 * 256;
  }
  ces.weights_bytes = total;
  if (total == 0 || p.weights_stripped) return ok_status();
  SRT_CUDA(cudaMalloc(&ces.weights, total));
  for (size_t i = 0; i < p.weights.size(); ++i)
    if (p.weights[i].size)
      SRT_CUDA(cudaMemcpy(ces.weight_ptr(static_cast<int32_t>(i)), p.weight_data[i].data(), p.weights[i].size,
                          cudaMemcpyHostToDevice));
  return ok_status();
}

}  // namespace streamrt::cuda
