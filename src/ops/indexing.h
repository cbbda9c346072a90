// Helpers shared by the ops that address data through index tensors (Gather, GatherElements,
// GatherND, ScatterElements / Scatter, ScatterND): index dtypes, range checks, the data offsets
// that index tensors address, and the scatter reductions. Indices are data: an out-of-range one
// is an error naming it, never an out-of-bounds access.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

inline bool is_index_type(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

// Same rank and no static dims that differ (shape rules: -1 matches anything).
bool dims_may_match(const Dims& a, const Dims& b);

// Checks that every index lies in [-dim, dim); the message names the first bad one.
Status check_indices(const ir::Node& node, StatusCode code, const std::vector<int64_t>& idx, int64_t dim);

// GatherElements / ScatterElements: `indices` has data's rank and, off the axis, dims no larger
// than data's (dynamic dims, -1, are not checked). `code`: kInvalidModel in a shape rule,
// kInvalidArgument in a kernel.
Status check_element_dims(const ir::Node& node, StatusCode code, const Dims& data, const Dims& indices, int64_t axis);

// Attribute `axis` (default 0) of GatherElements / ScatterElements, normalized against data's rank.
Result<int64_t> element_axis(const ir::Node& node, size_t rank);
// Their shape rules' check: when data and indices have ranks, the axis and dims agree.
Status infer_element_dims(const InferContext& ctx);

// The element offset into `data` of every element of `indices` (GatherElements reads there,
// ScatterElements writes there): the element's own multi-index with the axis coordinate replaced
// by its index value (negative counts from the end). Checks dims and index values.
Result<std::vector<int64_t>> element_offsets(const KernelContext& ctx, const Dims& data, const TensorRef& indices,
                                             int64_t axis);

// GatherND / ScatterND with `batch_dims` leading batch axes: the last axis of `indices` (length
// k) picks a slice data[batch..., i0, .., ik-1, :]. offsets: the element offset of each slice in
// data; slice: the elements in one slice (product of data dims after batch_dims + k).
struct NdSlices {
  std::vector<int64_t> offsets;
  int64_t slice = 0;
};
// Shape part of the rule (kernels and shape rules): ranks, k <= rank - batch_dims, equal batch
// dims (dynamic ones are not checked). Returns k, or -1 when the last dim of indices is dynamic.
Result<int64_t> check_nd_dims(const ir::Node& node, StatusCode code, const Dims& data, const Dims& indices,
                              int64_t batch_dims);
// indices.dims[:-1] + data.dims[batch_dims + k:]: GatherND's output, ScatterND's updates.
Dims nd_result_dims(const Dims& data, const Dims& indices, int64_t k, int64_t batch_dims);
Result<NdSlices> nd_slice_offsets(const KernelContext& ctx, const Dims& data, const TensorRef& indices,
                                  int64_t batch_dims);

// The `reduction` attribute of ScatterElements / ScatterND: none before opset 16; add / mul
// from 16; max / min from 18. The deprecated Scatter has none.
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };
Result<ScatterReduction> scatter_reduction(const ir::Node& node);

// Shape rules of ScatterElements / ScatterND: data, int indices and updates of data's type are
// present, and the reduction is one the opset has.
Status check_scatter_inputs(const InferContext& ctx);

// out[offsets[k] + r] = reduce(out[offsets[k] + r], updates[k * slice + r]) for r < slice, in the
// order of k (with kNone, the last of repeated offsets wins). `out` already holds the data;
// offsets are in range (element_offsets / nd_slice_offsets checked them).
Status scatter_into(const KernelContext& ctx, ScatterReduction r, const TensorRef& out, const TensorRef& updates,
                    const std::vector<int64_t>& offsets, int64_t slice);

}  // namespace streamrt::ops
