#include "core/guard.h"
#include "runtime/device_backend.h"

namespace streamrt {

ExecutionContext::ExecutionContext(std::unique_ptr<ContextImpl> impl, std::shared_ptr<Engine> engine)
    : impl_(std::move(impl)), engine_(std::move(engine)) {}

ExecutionContext::~ExecutionContext() {
  impl_.reset();  // the device state of the context goes before the engine may change budget
  const_cast<EngineState&>(engine_->state()).live_contexts.fetch_sub(1);
}

Status ExecutionContext::set_input_shape(const std::string& name, const Dims& dims) {
  return guard([&] { return "ExecutionContext::set_input_shape '" + name + "'"; }, [&]() -> Status {
    return impl_->set_input_shape(name, dims);
  });
}
Status ExecutionContext::set_tensor_address(const std::string& name, void* data, size_t capacity) {
  return guard([&] { return "ExecutionContext::set_tensor_address '" + name + "'"; }, [&]() -> Status {
    return impl_->set_tensor_address(name, data, capacity);
  });
}
Result<Dims> ExecutionContext::tensor_shape(const std::string& name) const {
  return guard([&] { return "ExecutionContext::tensor_shape '" + name + "'"; }, [&]() -> Result<Dims> {
    return impl_->tensor_shape(name);
  });
}
Status ExecutionContext::set_sequence_input(const std::string& name, const SequenceValue& value) {
  return guard([&] { return "ExecutionContext::set_sequence_input '" + name + "'"; }, [&]() -> Status {
    return impl_->set_sequence_input(name, value);
  });
}

Result<SequenceValue> ExecutionContext::sequence_output(const std::string& name) const {
  return guard([&] { return "ExecutionContext::sequence_output '" + name + "'"; }, [&]() -> Result<SequenceValue> {
    return impl_->sequence_output(name);
  });
}

Status ExecutionContext::enqueue(void* stream) {
  return guard("ExecutionContext::enqueue", [&]() -> Status {
    return impl_->enqueue(stream);
  });
}
Status ExecutionContext::set_cuda_graph(bool enable) {
  return guard("ExecutionContext::set_cuda_graph", [&]() -> Status {
    return impl_->set_cuda_graph(enable);
  });
}
Result<CudaGraphStats> ExecutionContext::last_run_graph_stats() const {
  return guard("ExecutionContext::last_run_graph_stats", [&]() -> Result<CudaGraphStats> {
    return impl_->last_run_graph_stats();
  });
}
void ExecutionContext::set_streaming_profiling(bool enable) { impl_->set_streaming_profiling(enable); }
Result<StreamingStats> ExecutionContext::last_run_stats() const {
  return guard("ExecutionContext::last_run_stats", [&]() -> Result<StreamingStats> {
    return impl_->last_run_stats();
  });
}
void ExecutionContext::set_step_timing(bool enable) { impl_->set_step_timing(enable); }
Result<std::vector<double>> ExecutionContext::last_step_times_ms() const {
  return guard("ExecutionContext::last_step_times_ms", [&]() -> Result<std::vector<double>> {
    return impl_->last_step_times_ms();
  });
}
Status ExecutionContext::execute() {
  return guard("ExecutionContext::execute", [&]() -> Status {
    SRT_RETURN_IF_ERROR(impl_->enqueue(nullptr));
    return impl_->synchronize(nullptr);
  });
}

}  // namespace streamrt
