// Host-side logic of ConstantOfShape shared by src/ops/constant_of_shape.cc and
// src/backends/cuda/kernels/constant_of_shape.cu.
#pragma once

#include "ops/op.h"

namespace streamrt::ops {

// The fill element: the 'value' attribute's single value, or float32 zero.
Result<Tensor> fill_value(const ir::Node& node);

}  // namespace streamrt::ops
