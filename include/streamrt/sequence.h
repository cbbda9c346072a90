// Sequence and optional values (ONNX seq(tensor) / optional(tensor) / optional(seq(tensor))) as
// inputs and outputs of an engine.
//
// An engine input or output whose TensorDesc::kind is not kTensor holds such a value. Bind one
// with ExecutionContext::set_sequence_input (the context keeps a copy in device memory) instead
// of set_input_shape / set_tensor_address, and read one after a run with
// ExecutionContext::sequence_output (an output of this kind needs no address: the context holds
// it, since its size is known only once it is made). Inside the engine the value travels as one
// byte buffer (TensorDesc dtype kUInt8, dims [-1]); the ops that make and read sequences run on
// the host (on CUDA as host steps).
#pragma once

#include <cstdint>
#include <vector>

#include "streamrt/types.h"

namespace streamrt {

// One tensor held on the host: dims and the row-major little-endian bytes of its elements
// (numel * dtype_size(dtype) of them).
struct HostTensor {
  DataType dtype = DataType::kUndefined;
  Dims dims;
  std::vector<uint8_t> data;
};

struct SequenceValue {
  ValueKind kind = ValueKind::kSequence;  // never kTensor
  // Optionals: whether it holds an element (a tensor, or a sequence of `tensors`). Sequences: true.
  bool has_value = true;
  // The tensors' element type; required (an empty sequence keeps its type).
  DataType elem_dtype = DataType::kUndefined;
  // kSequence / kOptionalSequence: the elements, each of elem_dtype; kOptionalTensor: exactly one
  // tensor when has_value, none otherwise.
  std::vector<HostTensor> tensors;
};

}  // namespace streamrt
