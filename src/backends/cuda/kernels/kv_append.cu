// KvAppend on CUDA: one pitched copy of the new rows into each (batch, head) block of the present
// (and, when present is not past's buffer, one of past's rows first). Layout and checks are
// src/ops/kv_append.cc's ops::kv_append_layout, shared with the CPU kernel.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/kv_append.h"

namespace streamrt::cuda {
namespace {

Status kv_append_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ops::KvAppendLayout l, ops::kv_append_layout(ctx));
  auto* out = static_cast<char*>(ctx.output(0).data);
  if (!l.in_place)
    SRT_RETURN_IF_ERROR(pitched_copy_cuda(out, l.pitch, ctx.input(0).data, l.pitch, l.outer, l.past_bytes, ctx.stream()));
  return pitched_copy_cuda(out + l.past_bytes, l.pitch, ctx.input(1).data, l.new_bytes, l.outer, l.new_bytes,
                           ctx.stream());
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(KvAppend, "KvAppend", kv_append_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
