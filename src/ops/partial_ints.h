// Helpers for PartialInts (op.h): the elements of small int shape tensors known one by one.
// Ops publish them from infer() with these; the inference driver turns a fully known one into
// the tensor's value.
#pragma once

#include <string>

#include "ops/op.h"

namespace streamrt::ops {

// The elements of a shape vector: a dynamic dim (-1) is an unknown element.
PartialInts partial_of_dims(const Dims& dims);

// "[2,?,8]": the known elements, '?' for the others.
std::string partial_to_string(const PartialInts& p);

// True when every element is known.
bool fully_known(const PartialInts& p);

// The tensor of dtype `dtype` (int64 or int32) and `dims` holding `p`, when every element is
// known, fits the dtype and `dims` holds exactly p.size() elements; nullopt otherwise.
std::optional<Tensor> partial_to_tensor(const PartialInts& p, DataType dtype, const Dims& dims);

// For ops that keep the elements of input `in` in order (Unsqueeze, Squeeze, Reshape, int-to-int
// Cast): output `out` has input `in`'s known elements. `dtype` is the output's; an element
// that does not fit it becomes unknown.
void forward_partial(InferContext& ctx, DataType dtype, size_t in = 0, size_t out = 0);

}  // namespace streamrt::ops
