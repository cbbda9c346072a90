// Constant on CUDA: copies the value attribute to the device. The bytes are read straight from
// the node's attribute (the tensor, or the float / int / list members), which lives in the
// engine's plan for the engine's lifetime, so the async host-to-device copy never reads freed
// memory. The attribute choice and its checks mirror src/ops/constant.cc.
#include "backends/cuda/kernels/data_movement.cuh"
#include "ops/constant.h"
#include "ops/data_movement.h"

namespace streamrt::cuda {
namespace {


struct HostBytes {
  DataType dtype = DataType::kUndefined;
  Dims dims;
  const void* data = nullptr;  // inside the node's attribute
};

Result<HostBytes> attribute_bytes(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(std::string key, ops::constant_value_key(node));
  const ir::Attribute& a = node.attrs.at(key);
  // The typed getters check the attribute kind (and give constant.cc's errors).
  if (key == "value") {
    SRT_RETURN_IF_ERROR(node.attr_tensor(key).status());
    return HostBytes{a.t.dtype(), a.t.dims(), a.t.data()};
  }
  if (key == "value_float") {
    SRT_RETURN_IF_ERROR(node.attr_float(key).status());
    return HostBytes{DataType::kFloat32, {}, &a.f};
  }
  if (key == "value_floats") {
    SRT_RETURN_IF_ERROR(node.attr_floats(key).status());
    return HostBytes{DataType::kFloat32, {static_cast<int64_t>(a.floats.size())}, a.floats.data()};
  }
  if (key == "value_int") {
    SRT_RETURN_IF_ERROR(node.attr_int(key).status());
    return HostBytes{DataType::kInt64, {}, &a.i};
  }
  if (key == "value_ints") {
    SRT_RETURN_IF_ERROR(node.attr_ints(key).status());
    return HostBytes{DataType::kInt64, {static_cast<int64_t>(a.ints.size())}, a.ints.data()};
  }
  return node.error(StatusCode::kUnsupported, "attribute '" + key + "' is not supported");
}

Status constant_cuda(CudaKernelContext& ctx) {
  SRT_RETURN_IF_ERROR(ops::require_bound(ctx, 0));
  SRT_ASSIGN_OR_RETURN(HostBytes v, attribute_bytes(ctx.node()));
  const ops::TensorRef& y = ctx.output(0);
  if (v.dtype != y.dtype || v.dims != y.dims) return ctx.error("output does not match the value");
  const size_t bytes = y.nbytes();
  if (bytes) SRT_CUDA(cudaMemcpyAsync(y.data, v.data, bytes, cudaMemcpyHostToDevice, ctx.stream()));
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Constant, "Constant", constant_cuda, ops::kAnyDType);

}  // namespace streamrt::cuda
