// Shared logic of execution contexts on every device: I/O binding, input shapes within the
// profile, and the per-step shape rule run on the host.
#pragma once

#include <functional>

#include "plan/capacity_layout.h"
#include "runtime/device_backend.h"

namespace streamrt {

class ContextBase : public ContextImpl {
 public:
  explicit ContextBase(std::shared_ptr<const Engine> engine);

  Status set_input_shape(const std::string& name, const Dims& dims) override;
  Status set_tensor_address(const std::string& name, void* data, size_t capacity) override;
  Result<Dims> tensor_shape(const std::string& name) const override;
  Status set_sequence_input(const std::string& name, const SequenceValue& value) override;
  Result<SequenceValue> sequence_output(const std::string& name) const override;

 protected:
  const plan::PlanData& plan() const { return es_->plan.data; }
  Result<int32_t> io_value(const std::string& name) const;
  const plan::IoTensor* input_desc(int32_t v) const;
  // Output dims from the last run no longer hold once inputs change.
  void invalidate_outputs();
  // Checks every input has a shape and an address and every output an address.
  Status check_bindings() const;
  // Runs step `index`'s shape rule and gets memory for each of its outputs from `place`
  // (value, bytes, out pointer). `inputs` hold dtype/dims and, where the caller has them on the
  // host, the contents (value != nullptr). Absent outputs stay empty refs.
  using PlaceFn = std::function<Status(int32_t value, uint64_t bytes, void** out)>;
  Result<std::vector<ops::TensorRef>> prepare_outputs(size_t index, std::vector<ops::TensorInfo> inputs,
                                                      const PlaceFn& place) const;
  // Points output value `v` (bytes long) at the user's buffer, checking its capacity; a sequence /
  // optional output without one gets a buffer the context holds (seq_out_).
  Status output_buffer(int32_t v, uint64_t bytes, void** out) const;
  // Bytes value `v` of `dims` occupies in its buffer: dense, or an I/O tensor stored with a
  // capacity (plan/capacity_layout.h); an error names it when dims exceed that capacity.
  Result<uint64_t> stored_bytes(int32_t v, const Dims& dims) const;
  // Host view of a bound input's contents, for shape-only passes (shape tensors); an empty
  // Tensor when the device cannot provide it cheaply.
  virtual Tensor input_on_host(int32_t v) const;

  std::shared_ptr<const Engine> engine_;
  const EngineState* es_;
  std::vector<Dims> input_dims_;        // per plan value (inputs)
  std::vector<void*> bound_;            // per plan value (inputs / outputs)
  std::vector<size_t> capacity_;        // per plan value (inputs / outputs)
  std::vector<plan::ValueLayout> layouts_;  // per plan value: dense, or a KV cache's capacity
  std::vector<Dims> output_dims_;       // per plan value (outputs), valid when have_outputs_
  bool have_outputs_ = false;
  // Sequence / optional inputs and outputs the context holds (streamrt/sequence.h), per plan value.
  std::vector<DeviceBuffer> seq_in_;
  mutable std::vector<DeviceBuffer> seq_out_;
};

}  // namespace streamrt
