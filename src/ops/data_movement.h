// Byte-moving helpers shared by the data-movement ops (Transpose, Slice, Concat, Split, Gather,
// Tile, Pad, DepthToSpace, ...). These ops never look at element values, so every dtype is
// handled by copying `elem_size` bytes per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

// Row-major element strides of `dims`.
std::vector<int64_t> dense_strides(const Dims& dims);

// Copies the strided view of `src` described by (`out_dims`, `src_strides` in elements, may
// be zero or negative, `src_offset` in elements) into dense `dst` of shape `out_dims`.
// The caller guarantees that every addressed source element is in bounds.
void strided_copy(void* dst, const void* src, size_t elem_size, const Dims& out_dims,
                  const std::vector<int64_t>& src_strides, int64_t src_offset);

// A strided view of a source tensor: output dims and the source stride (in elements) of each.
struct StridedView {
  Dims dims;
  std::vector<int64_t> strides;
};

// `out_dims` / `src_strides` with unit dims dropped and dims that are contiguous in the source
// merged (fewer, longer rows); the copy it describes is the same. Shared by strided_copy and
// the CUDA strided copy.
StridedView merge_strided_view(const Dims& out_dims, const std::vector<int64_t>& src_strides);

// Product of dims[begin, end) for static dims.
int64_t dims_product(const Dims& dims, size_t begin, size_t end);

// Product of dims[begin, end) where dims may be dynamic: -1 if any factor is dynamic and no
// factor is 0 (a static 0 makes the product 0 whatever the others are). A product past
// INT64_MAX (absurd declared dims) is reported as -1 too: no tensor that large can exist.
int64_t dims_product_or_dynamic(const Dims& dims, size_t begin, size_t end);

// Merges two views of one dimension seen by different inputs: equal, or one dynamic.
// Returns nullopt on a static mismatch.
std::optional<int64_t> merge_dim(int64_t a, int64_t b);

// Reads an int tensor known at inference time (shape inputs); error names the input.
Result<std::vector<int64_t>> known_int_values(const InferContext& ctx, size_t input,
                                              const char* what);

// An int list given as an input (newer opsets) or as an attribute (older ones).
struct IntList {
  bool given = false;                          // the input or the attribute is present
  std::optional<std::vector<int64_t>> values;  // nullopt when given as an input not known yet
};
// Reads input `input` if present (its value may be unknown at build time), else attribute `attr`.
Result<IntList> read_int_list(const InferContext& ctx, size_t input, const std::string& attr);

// Static length of a 1-D shape input (its single dim), or -1 when unknown.
int64_t static_length_1d(const InferContext& ctx, size_t input);

// Normalizes a list of axes against `rank`, rejecting out-of-range and repeated axes.
Result<std::vector<int64_t>> normalize_axes(const ir::Node& node, const std::vector<int64_t>& axes,
                                            int64_t rank);

// Owned tensor holding `v` (works for empty `v`, where Tensor::from_vector would pass a null
// pointer to memcpy). dims must hold exactly v.size() elements.
template <typename T>
Tensor tensor_of(DataType dtype, const Dims& dims, const std::vector<T>& v) {
  Tensor t = Tensor::allocate(dtype, dims).value();
  if (!v.empty()) std::memcpy(t.mutable_data(), v.data(), t.nbytes());
  return t;
}

// Kernel-side guard: inputs 0..n-1 and output 0 are bound.
Status require_bound(const KernelContext& ctx, size_t n);

// Kernel-side guard: output `i` must be `dtype` with `dims` (what infer() gave it), so that a
// kernel never writes past the buffer it was handed.
Status check_output(const KernelContext& ctx, size_t i, DataType dtype, const Dims& dims);

// Kernel of the ops that only change dims (Reshape, Flatten, Squeeze, Unsqueeze): copies the
// input bytes to the output after checking that both hold the same number of elements; nothing
// to copy when the memory plan made the output a view of the input (the same buffer).
Status copy_bytes_cpu(KernelContext& ctx);

}  // namespace streamrt::ops
