// NumPy .npy files (format versions 1-3, little endian, C order) <-> Tensor.
#pragma once

#include <string>

#include "core/tensor.h"

namespace streamrt {

// Larger .npy files are refused before they are read (an input, not a weight store).
inline constexpr uint64_t kMaxNpyFileBytes = uint64_t{16} << 30;  // 16 GiB

// Reads a .npy file: a regular file (core/file_io.h) of at most `max_bytes` (kInvalidArgument
// otherwise, before anything is read). Unsupported dtypes (e.g. complex, strings) and Fortran
// order are kUnsupported; "<u2" is uint16 (a bfloat16 file written by save_npy reads back as
// uint16: Tensor::retyped makes it bfloat16 again); a malformed header is kInvalidArgument naming the file.
Result<Tensor> load_npy(const std::string& path, uint64_t max_bytes = kMaxNpyFileBytes);
Result<Tensor> parse_npy(const std::string& bytes, const std::string& what);
// Writes a tensor as a version 1.0 .npy file (bfloat16 is written as its uint16 bits, "<u2"),
// atomically; a target that is not a regular file is refused (core/file_io.h).
Status save_npy(const Tensor& t, const std::string& path);

}  // namespace streamrt
