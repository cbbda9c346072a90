// The op interface. Each op lives in its own file under src/ops/ with:
//   - a shape/type rule  `Status infer(InferContext&)`  (must accept dynamic dims, -1,
//     and produce -1 where an output dim is not known; never fail only because of it),
//   - a CPU reference kernel `Status cpu(KernelContext&)`,
//   - a registration:  STREAMRT_REGISTER_OP(Relu, {.op_type = "Relu", .infer = ..., .cpu = ...});
//   - for ops whose attributes drive sizes or indexing, a load-time check
//     `Status verify(const InferContext&)` (.verify), next to the shape rule.
//   - what the central code asks about it (the types its CPU kernel takes, weights that may
//     stream, view / fusable / TF32 / cost rule, ...): fields of its OpSchema, below.
// Adding an op touches its own file and tests, nothing central (a CUDA kernel likewise lists its
// types in its own registration, backends/cuda/cuda_kernel_registry.h).
#pragma once

#include <algorithm>
#include <climits>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/dtypes.h"

namespace streamrt::ops {

// The elements of a small int tensor known one by one (row-major; nullopt = unknown at build
// time): what a shape computation over dynamic dims still knows. Shape of a [1, -1, 256] tensor
// is {1, ?, 256}; Gather / Concat / Unsqueeze / Cast / Slice carry such elements on, so that a
// Reshape target Concat(Unsqueeze(batch), Unsqueeze(seq), [8], [64]) fixes the dims it can
// (ONNX shape inference calls this data propagation). Only for tensors of at most
// kMaxPartialInts elements: shape vectors, never data.
using PartialInts = std::vector<std::optional<int64_t>>;
inline constexpr size_t kMaxPartialInts = 64;

// What shape inference knows about one tensor.
struct TensorInfo {
  DataType dtype = DataType::kUndefined;
  Dims dims;
  bool has_shape = false;        // rank known
  const Tensor* value = nullptr;  // contents, when known at inference time (constants, shapes)
  const PartialInts* partial = nullptr;  // some elements, when `value` is unknown
  // Non-tensor values (sequence / optional, ir::SeqType): dtype kUInt8, dims [bytes] or [-1], and
  // this says what the value holds. Sequence ops set it with InferContext::set_output_info.
  ir::SeqType seq;
};

class InferContext {
 public:
  InferContext(const ir::Node& node, std::vector<TensorInfo> inputs, size_t num_outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), values_(num_outputs),
        partials_(num_outputs) {}

  const ir::Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  size_t num_inputs() const { return inputs_.size(); }
  // False for an omitted optional input or an index past the end.
  bool has_input(size_t i) const {
    return i < inputs_.size() && inputs_[i].dtype != DataType::kUndefined;
  }
  const TensorInfo& input(size_t i) const { return inputs_[i]; }
  DataType input_dtype(size_t i) const { return inputs_[i].dtype; }
  const Dims& input_dims(size_t i) const { return inputs_[i].dims; }
  const Tensor* input_value(size_t i) const { return has_input(i) ? inputs_[i].value : nullptr; }
  // Input i's elements as far as they are known, for an int64 / int32 input of at most
  // kMaxPartialInts elements: all of them when its value is known, else what its producer
  // published with set_output_partial, else (static dims) as many unknown elements; nullopt
  // for other inputs.
  std::optional<PartialInts> input_partial(size_t i) const;

  size_t num_outputs() const { return outputs_.size(); }
  // Writes past the node's declared outputs (absent optional outputs) are dropped.
  void set_output(size_t i, DataType dtype, Dims dims) {
    if (i < outputs_.size()) outputs_[i] = TensorInfo{dtype, std::move(dims), true, nullptr};
  }
  // Output with input `in`'s shape (or lack of it) and the given dtype.
  void set_output_like(size_t i, DataType dtype, size_t in) {
    if (i < outputs_.size() && in < inputs_.size())
      outputs_[i] = TensorInfo{dtype, inputs_[in].dims, inputs_[in].has_shape, nullptr, nullptr, inputs_[in].seq};
  }
  // Output of unknown rank (e.g. Reshape whose shape input is unknown and of unknown length).
  void set_output_unranked(size_t i, DataType dtype) {
    if (i < outputs_.size()) outputs_[i] = TensorInfo{dtype, {}, false, nullptr};
  }
  // Output i described in full (sequence / optional outputs: TensorInfo::seq); value and
  // partial are ignored (set_output_value gives contents).
  void set_output_info(size_t i, TensorInfo info) {
    info.value = nullptr;
    info.partial = nullptr;
    if (i < outputs_.size()) outputs_[i] = std::move(info);
  }
  // Declares the output's contents known now (e.g. Shape on a static input).
  void set_output_value(size_t i, Tensor t) {
    if (i < values_.size()) values_[i] = std::move(t);
  }

  // Publishes the known elements of output i, an int tensor whose value is not known as a
  // whole. Inference keeps them when they fit the output's (static) dims, and makes them the
  // output's value once every element is known.
  void set_output_partial(size_t i, PartialInts p) {
    if (i < partials_.size()) partials_[i] = std::move(p);
  }

  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  std::vector<std::optional<Tensor>>& output_values() { return values_; }
  std::vector<std::optional<PartialInts>>& output_partials() { return partials_; }

  // Error with code kInvalidModel prefixed by the node description.
  Status error(const std::string& msg) const { return node_.error(StatusCode::kInvalidModel, msg); }
  Status unsupported(const std::string& msg) const {
    return node_.error(StatusCode::kUnsupported, msg);
  }

 private:
  const ir::Node& node_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::vector<std::optional<Tensor>> values_;
  std::vector<std::optional<PartialInts>> partials_;
};

// A tensor bound to memory for a kernel. Dims are always static here.
struct TensorRef {
  DataType dtype = DataType::kUndefined;
  Dims dims;
  void* data = nullptr;

  bool present() const { return dtype != DataType::kUndefined; }
  int64_t numel() const { return dims_numel(dims); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::span<const TensorRef> inputs,
                std::span<const TensorRef> outputs)
      : node_(node), inputs_(inputs), outputs_(outputs) {}

  const ir::Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].present(); }
  const TensorRef& input(size_t i) const { return inputs_[i]; }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < outputs_.size() && outputs_[i].present(); }
  // Output memory is allocated with the dims infer() produced.
  const TensorRef& output(size_t i) const { return outputs_[i]; }

  Status error(const std::string& msg) const { return node_.error(StatusCode::kInvalidArgument, msg); }
  Status unsupported(const std::string& msg) const {
    return node_.error(StatusCode::kUnsupported, msg);
  }

 private:
  const ir::Node& node_;
  std::span<const TensorRef> inputs_;
  std::span<const TensorRef> outputs_;
};

using InferFn = Status (*)(InferContext&);
using KernelFn = Status (*)(KernelContext&);
// Load-time check of one step of a plan read from a file (plan_verify runs it on every step,
// before the step's shape rule, with the inputs at the profile's max dims and the contents of
// weights and propagated shape tensors). A plan is untrusted input: this bounds what the shape
// rule does not, so that neither the rule's arithmetic nor the kernels, which trust the
// attributes, can overflow or index out of range. Outputs are not set yet. kInvalidModel
// naming the node and attribute, as ctx.error() does.
using VerifyFn = Status (*)(const InferContext&);
// Floating-point operations of one step: `inputs` are its inputs' dims (null for an absent
// one), `out` its first output's; unknown dims (-1) count as 1. An estimate, never an error.
using FlopsFn = double (*)(const ir::Node& node, std::span<const Dims* const> inputs, const Dims& out);

// A tensor stored with room for more entries along one axis than its dims hold: a KV cache laid
// out for `capacity` positions (BuilderConfig::kv_cache_in_place). Element (i0, .., s, .., ik)
// sits where it would in a dense tensor whose dim `axis` were `capacity`, so appending positions
// moves nothing. Only engine inputs and outputs are stored so (the plan records it per I/O tensor,
// plan/capacity_layout.h), and every step that reads or writes one must declare it.
struct CapacityLayout {
  bool output = false;  // output `index`, else input `index`
  int index = 0;
  int64_t axis = 0;  // < 0: counted from the last dim
  int64_t capacity = 0;
};
// The inputs / outputs a step's kernels read or write in that layout, from its attributes (a
// malformed attribute declares nothing: the kernel refuses it).
using CapacityFn = std::vector<CapacityLayout> (*)(const ir::Node& node);

// The largest magnitude a size-like attribute of a plan step (pads, strides, dilations, kernel
// sizes, block sizes, ...) may have: far beyond any real tensor dim, yet small enough that the
// sums and products of a few such values in a shape rule cannot overflow int64.
inline constexpr int64_t kMaxAttrExtent = int64_t{1} << 30;

// Every ONNX op's first output is required, and kernels write it unchecked: a node without one
// (a crafted plan or program) is an error naming it. Shape inference and evaluate_on_host call it.
Status verify_first_output(const ir::Node& node);
// For verify functions: each value of INT / INTS attribute `attr`, when present, within [lo, hi].
Status verify_attr_range(const ir::Node& node, const char* attr, int64_t lo, int64_t hi);
// INT attribute `attr` (default `def`) an axis of a tensor of input `in`'s rank plus `extra`
// (Unsqueeze-like ops count the new axes): in [-rank, rank) when the rank is known.
Status verify_axis_attr(const InferContext& ctx, const char* attr, int64_t def, size_t in = 0,
                        int64_t extra = 0);

struct OpSchema {
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int min_opset = 1;   // oldest opset version whose semantics the rule and kernel handle
  InferFn infer = nullptr;
  KernelFn cpu = nullptr;
  VerifyFn verify = nullptr;  // optional: see VerifyFn
  // Which inputs must be known at inference time (shape tensors such as Reshape's `shape`).
  // Values are propagated for these so the memory plan can be sized.
  std::vector<int> shape_inputs;

  // What the central code (builder passes, planners, engines, `streamrt ops`) asks about an op.
  // Adding an op sets these in its own registration; nothing central names it.

  // The data types the CPU kernel takes for the step's main tensor (ops/dtypes.h; e.g.
  // dtypes(kFloats)): input `dtype_input`, or output 0 when that is -1 or the input is absent
  // (ops without inputs). A CUDA kernel's registration lists its own (cuda_kernel_registry.h).
  DTypeMask cpu_dtypes = 0;
  int dtype_input = 0;
  // Weight operands of a weight-heavy op (MatMul's A / B / bias, Conv's W / B, Gather's table):
  // a weight that only such inputs read may stream (builder/streamable.cc).
  std::vector<int> streamable_inputs;
  // Weight inputs read a few rows at a time (Gather's table): a streamed one can be read in
  // place from pinned host memory instead of taking a slot (residency planner).
  std::vector<int> table_inputs;
  // Inputs whose dims alone the kernel reads, never their contents (Shape, Size): an engine
  // need not copy them to run the step on the host.
  std::vector<int> dims_only_inputs;
  // Output 0 is input 0's bytes under other dims (Reshape, Squeeze, Identity, ...): the builder
  // gives it input 0's arena slot and the plan verifier lets the two overlap (plan/view_steps.h).
  bool view = false;
  // The CUDA kernel may compute float32 in TF32 when the build allows it (builder/tactics.cc).
  bool tf32 = false;
  // The fused element-wise opcode (ops/fused_elementwise.h fused::Opcode) computing this op on
  // one element, or -1: the fusion pass folds chains of such ops into one FusedElementwise.
  int fused_opcode = -1;
  // An INT attribute naming the output's float data type (Cast's `to`): the reduced-precision
  // pass turns a float32 there into the target type.
  const char* output_dtype_attr = nullptr;
  // That attribute, when omitted, means float32 (SequenceEmpty's `dtype`): the pass then names the
  // target type. False: an omitted one means the input's type, or stays float32 on purpose.
  bool output_dtype_defaults_to_float = false;
  // A TENSOR attribute whose element type the output takes (Constant's and ConstantOfShape's
  // `value`): the reduced-precision pass turns a float32 one into the target type.
  const char* output_value_attr = nullptr;
  // That attribute, when omitted, means a float32 zero (ConstantOfShape): the pass then writes a
  // zero of the target type, so the output follows the graph around it.
  bool output_value_defaults_to_float_zero = false;
  // Inputs / outputs its kernels address with a capacity stride (CapacityLayout above): the
  // plan verifier holds them against the engine I/O tensors' recorded layouts.
  CapacityFn capacity_layouts = nullptr;
  // Arithmetic of one step at the given dims, for the residency planner's time estimates
  // (optional: an op without it counts as bound by the bytes it reads and writes).
  FlopsFn flops = nullptr;
  // The outputs are random draws (RandomUniform, Bernoulli, ...), not a function of the inputs:
  // the builder never computes them at build time (constant folding, value propagation), and the
  // onnx-test runner checks only their dtypes and dims (plus what the values must satisfy).
  bool nondeterministic = false;
  // The builder always rewrites a step of this op into one of that (default-domain) op before
  // it reaches a plan (MatMulNBits -> WeightOnlyMatMul): which devices can run it is that op's
  // question (the delegate partitioner, `streamrt ops`).
  const char* built_as = nullptr;
};

// For FlopsFn: the elements of `d`, an unknown (-1) dim counted as 1.
inline double estimate_numel(const Dims& d) {
  double n = 1;
  for (int64_t x : d) n *= x > 0 ? static_cast<double>(x) : 1.0;
  return n;
}
// Input k's dims for a FlopsFn, or null when the input is absent.
inline const Dims* cost_input(std::span<const Dims* const> inputs, size_t k) {
  return k < inputs.size() ? inputs[k] : nullptr;
}

class OpRegistry {
 public:
  static OpRegistry& global();
  // Registers a schema; a duplicate (op_type, domain) is recorded as an error.
  void add(OpSchema schema);
  const OpSchema* find(const std::string& op_type, const std::string& domain = "") const;
  const OpSchema* find(const ir::Node& node) const { return find(node.op_type, node.domain); }
  const std::vector<OpSchema>& schemas() const { return schemas_; }
  std::vector<std::string> op_types() const;
  // Problems seen during static registration (duplicates); empty when healthy.
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<OpSchema> schemas_;
  std::vector<std::string> errors_;
};

// The registered schema of `node`'s op, or null.
inline const OpSchema* schema_of(const ir::Node& node) { return OpRegistry::global().find(node); }
// True when a schema's input list (streamable_inputs, ...) names input k.
inline bool lists_input(const std::vector<int>& list, size_t k) {
  return std::find(list.begin(), list.end(), static_cast<int>(k)) != list.end();
}
// The data type the schema's dtype masks speak of for `node` (see OpSchema::cpu_dtypes);
// `dtype_of(value)` gives a value's type. kUndefined when the node has no such tensor.
template <typename DtypeOf>
DataType main_dtype(const OpSchema& s, const ir::Node& node, DtypeOf&& dtype_of) {
  if (s.dtype_input >= 0 && static_cast<size_t>(s.dtype_input) < node.inputs.size() &&
      node.inputs[s.dtype_input] != ir::kNoValue)
    return dtype_of(node.inputs[s.dtype_input]);
  if (!node.outputs.empty() && node.outputs[0] != ir::kNoValue) return dtype_of(node.outputs[0]);
  return DataType::kUndefined;
}

struct OpRegistrar {
  explicit OpRegistrar(OpSchema schema) { OpRegistry::global().add(std::move(schema)); }
};

// Runs `schema.cpu` on host tensors; allocates outputs with dims from `schema.infer`.
// Used by constant folding and value propagation.
Result<std::vector<Tensor>> evaluate_on_host(const ir::Node& node, const std::vector<Tensor>& inputs);

}  // namespace streamrt::ops

#define STREAMRT_REGISTER_OP(id, ...) \
  static ::streamrt::ops::OpRegistrar _srt_op_registrar_##id(::streamrt::ops::OpSchema __VA_ARGS__)
