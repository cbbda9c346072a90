// ExecuTorch tensors <-> streamrt host tensors, for StreamRTBackend's execute in ExecuTorch.
// The core runs an engine on host tensors (it stages them into device memory itself for a CUDA
// engine). CPU tensors pass as views, without a copy; a tensor whose data ExecuTorch placed on a
// CUDA device (TensorImpl::device_type() == CUDA) is copied through host memory, which needs a
// library built with CUDA (STREAMRT_WITH_CUDA) and is otherwise NotSupported.
#pragma once

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include <string>

#include "core/tensor.h"

namespace streamrt::et {

// The input `t` as a host tensor: a read-only view of CPU memory, or a host copy of CUDA memory.
// kInvalidArgument for a dtype streamrt lacks or a non-contiguous dim order, naming `where`.
Result<Tensor> input_tensor(const ::executorch::aten::Tensor& t, const std::string& where);

// Writes the engine's output `result` into ExecuTorch's `out`: resizes it when the shape differs
// (a dynamic output; a static one of another shape fails), then copies the bytes.
Status write_output(const Tensor& result, ::executorch::aten::Tensor& out, const std::string& where);

}  // namespace streamrt::et
