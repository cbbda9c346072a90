// Conversion of ONNX TensorProto (inline or external data) to streamrt tensors.
#pragma once

#include <string>

#include "core/tensor.h"
#include "streamrt/sequence.h"

namespace onnx {
class TensorProto;
}

namespace streamrt::onnx_import {

// Maps an ONNX TensorProto data type number to a streamrt DataType (kUnsupported otherwise).
Result<DataType> dtype_from_onnx(int onnx_type, const std::string& what);
// The ONNX number for a streamrt DataType.
int dtype_to_onnx(DataType t);

// Converts a TensorProto. `base_dir` is the model's folder, used for external data; external
// data paths must be relative, must not contain "..", and must not resolve (through symlinks)
// outside base_dir; offset and length must lie inside the file.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);

// Reads a serialized TensorProto file (the ONNX backend-test input_N.pb / output_N.pb).
// Also returns the tensor's name.
Result<Tensor> load_tensor_pb(const std::string& path, std::string* name = nullptr);
// Reads a serialized SequenceProto (kind kSequence) or OptionalProto (the optional kinds) file of
// tensors, such as a backend test's input_N.pb for a sequence / optional input; `elem_dtype` is
// the declared element type (an empty sequence or optional carries none of its own).
Result<SequenceValue> load_sequence_pb(const std::string& path, ValueKind kind, DataType elem_dtype);
// Writes a tensor as a serialized TensorProto.
Status save_tensor_pb(const Tensor& t, const std::string& name, const std::string& path);

}  // namespace streamrt::onnx_import
