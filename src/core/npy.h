// NumPy .npy files (format versions 1-3, little endian, C order) <-> Tensor.
#pragma once

#include <string>

#include "core/tensor.h"

namespace streamrt {

// Reads a .npy file. Unsupported dtypes (e.g. float64, strings) and Fortran order are
// kUnsupported; a malformed header is kInvalidArgument naming the file.
Result<Tensor> load_npy(const std::string& path);
Result<Tensor> parse_npy(const std::string& bytes, const std::string& what);
// Writes a tensor as a version 1.0 .npy file (bfloat16 is written as its uint16 bits).
Status save_npy(const Tensor& t, const std::string& path);

}  // namespace streamrt
