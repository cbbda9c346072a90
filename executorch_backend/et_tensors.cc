// ExecuTorch tensors <-> streamrt host tensors (see et_tensors.h).
#include "et_tensors.h"

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include <cstring>
#include <vector>

#if defined(STREAMRT_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace streamrt::et {
namespace {

using ::executorch::aten::ScalarType;
using EtTensor = ::executorch::aten::Tensor;
using ::executorch::runtime::etensor::DeviceType;

Result<DataType> to_dtype(ScalarType t, const std::string& where) {
  switch (t) {
    case ScalarType::Float: return DataType::kFloat32;
    case ScalarType::Half: return DataType::kFloat16;
    case ScalarType::BFloat16: return DataType::kBFloat16;
    case ScalarType::Double: return DataType::kFloat64;
    case ScalarType::Long: return DataType::kInt64;
    case ScalarType::Int: return DataType::kInt32;
    case ScalarType::Short: return DataType::kInt16;
    case ScalarType::Char: return DataType::kInt8;
    case ScalarType::Byte: return DataType::kUInt8;
    case ScalarType::Bool: return DataType::kBool;
    case ScalarType::UInt16: return DataType::kUInt16;
    case ScalarType::UInt32: return DataType::kUInt32;
    case ScalarType::UInt64: return DataType::kUInt64;
    default:
      return invalid_argument(where + " is of ExecuTorch scalar type " + std::to_string(static_cast<int>(t)) +
                              ", which streamrt does not run");
  }
}

// streamrt reads and writes row-major bytes: any other dim order would be misread.
Status check_layout(const EtTensor& t, const std::string& where) {
  const auto order = t.dim_order();
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<decltype(order[i])>(i))
      return invalid_argument(where + " is not contiguous (its dim order is not 0..rank-1)");
  return ok_status();
}

Status cuda_copy(void* dst, const void* src, size_t bytes, bool to_device, const std::string& where) {
#if defined(STREAMRT_WITH_CUDA)
  const cudaError_t e = cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
  if (e != cudaSuccess)
    return device_error(where + ": copying " + std::to_string(bytes) + " bytes " + (to_device ? "to" : "from") +
                        " CUDA memory failed: " + cudaGetErrorString(e));
  return ok_status();
#else
  (void)dst, (void)src, (void)bytes, (void)to_device;
  return unsupported(where + " is in CUDA memory, and this libstreamrt was built without CUDA");
#endif
}

}  // namespace

Result<Tensor> input_tensor(const EtTensor& t, const std::string& where) {
  SRT_ASSIGN_OR_RETURN(DataType dtype, to_dtype(t.scalar_type(), where));
  SRT_RETURN_IF_ERROR(check_layout(t, where));
  Dims dims(t.sizes().begin(), t.sizes().end());
  if (t.device_type() == DeviceType::CPU) return Tensor::view(dtype, dims, t.const_data_ptr(), nullptr);
  SRT_ASSIGN_OR_RETURN(Tensor host, Tensor::allocate(dtype, dims));
  SRT_RETURN_IF_ERROR(cuda_copy(host.mutable_data(), t.const_data_ptr(), host.nbytes(), false, where));
  return host;
}

Status write_output(const Tensor& result, EtTensor& out, const std::string& where) {
  SRT_ASSIGN_OR_RETURN(DataType dtype, to_dtype(out.scalar_type(), where));
  if (dtype != result.dtype())
    return invalid_argument(where + " is " + dtype_name(dtype) + ", the engine produces " + dtype_name(result.dtype()));
  SRT_RETURN_IF_ERROR(check_layout(out, where));
  const Dims& dims = result.dims();
  if (!std::equal(dims.begin(), dims.end(), out.sizes().begin(), out.sizes().end())) {
    std::vector<::executorch::aten::SizesType> sizes(dims.begin(), dims.end());
    if (::executorch::runtime::resize_tensor(out, {sizes.data(), sizes.size()}) != ::executorch::runtime::Error::Ok)
      return invalid_argument(where + ": the engine's output shape " + dims_to_string(dims) +
                              " does not fit the program's output tensor");
  }
  if (out.nbytes() != result.nbytes())
    return internal_error(where + ": " + std::to_string(out.nbytes()) + " bytes for an output of " +
                          std::to_string(result.nbytes()));
  if (result.nbytes() == 0) return ok_status();
  if (out.device_type() == DeviceType::CPU) {
    std::memcpy(out.mutable_data_ptr(), result.data(), result.nbytes());
    return ok_status();
  }
  return cuda_copy(out.mutable_data_ptr(), result.data(), result.nbytes(), true, where);
}

}  // namespace streamrt::et
