// Which plan values are stored with a capacity along one axis (core/capacity_layout.h: a KV cache
// with room for more positions), and the rule that keeps kernels honest about it: only engine
// inputs and outputs are stored so (IoTensor::seq_capacity / seq_axis, bound by the caller and
// size-checked at that capacity), and every step reads and writes each value in exactly the
// layout its op declares (ops::OpSchema::capacity_layouts; inputs whose dims alone a step reads
// aside). The builder records the layouts from the steps (lowering); the plan verifier checks
// them on every plan read from a file. One rule for both, as plan/view_steps.h is for views.
#pragma once

#include <vector>

#include "plan/plan.h"

namespace streamrt::plan {

struct ValueLayout {
  int64_t capacity = 0;  // 0: dense
  int32_t axis = 0;
  bool operator==(const ValueLayout&) const = default;
};

// Per plan value: its I/O tensor's layout, dense for every other value (call after the plan's
// indices were checked).
std::vector<ValueLayout> value_layouts(const PlanData& plan);

// The I/O tensors' layouts are sound (a tensor, axis < rank, the profile's max or the static
// dims within the capacity, the stored size in int64) and every step's inputs and outputs are
// read / written in their values' layouts. kInvalidPlan naming the tensor or step.
Status check_capacity_layouts(const PlanData& plan);

// Builder: sets the I/O tensors' layouts from what the steps declare, then checks them as the
// verifier will. A declared layout on a value that is no engine I/O tensor, or two steps that
// disagree about one value, is kInternal (the pass that set the attributes is at fault).
Status record_capacity_layouts(PlanData& plan);

}  // namespace streamrt::plan
