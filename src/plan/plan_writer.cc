// Plan writer: PlanData -> header + metadata FlatBuffer + aligned weights section.
// The file layout is documented at the top of plan.h.
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

#include "core/file_io.h"
#include "plan/plan.h"
#include "plan/plan_generated.h"

namespace streamrt::plan {


// The schema's enums mirror the C++ ones; the numbering is part of the format.
static_assert(static_cast<int>(fb::DType::Bool) == static_cast<int>(DataType::kBool));
static_assert(static_cast<int>(fb::DType::MAX) == static_cast<int>(kLastDataType));
static_assert(static_cast<int>(fb::DType::Float64) == static_cast<int>(DataType::kFloat64));
static_assert(static_cast<int>(fb::DType::Int8) == static_cast<int>(DataType::kInt8));
static_assert(static_cast<int>(fb::DeviceKind::Cuda) == static_cast<int>(DeviceKind::kCuda));
static_assert(static_cast<int>(fb::ValueKind::Weight) ==
              static_cast<int>(ValueEntry::Kind::kWeight));
static_assert(static_cast<int>(fb::AttributeKind::Tensor) ==
              static_cast<int>(ir::Attribute::Kind::kTensor));
static_assert(static_cast<int>(fb::AttributeKind::Graph) == static_cast<int>(ir::Attribute::Kind::kGraph));
static_assert(std::endian::native == std::endian::little, "the plan format is little endian");

namespace {

using Builder = flatbuffers::FlatBufferBuilder;
template <typename T>
using Off = flatbuffers::Offset<T>;

constexpr uint8_t kZeros[4096] = {};

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Where bytes go: a vector, a file, or a checksum state.
using Sink = WriteSink;

Status write_zeros(const Sink& sink, uint64_t n) {
  while (n > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, sizeof(kZeros)));
    SRT_RETURN_IF_ERROR(sink(kZeros, chunk));
    n -= chunk;
  }
  return ok_status();
}

// ---- metadata -------------------------------------------------------------------------

fb::DType to_fb(DataType t) { return static_cast<fb::DType>(t); }

Off<flatbuffers::Vector<int64_t>> dims_vec(Builder& b, const Dims& d) { return b.CreateVector(d); }

Off<fb::TensorData> build_tensor(Builder& b, const Tensor& t) {
  if (t.empty()) return 0;
  auto dims = dims_vec(b, t.dims());
  // Views may carry any dims; only static, sane ones have bytes to write.
  auto numel = checked_numel(t.dims(), INT64_MAX / 8);
  Off<flatbuffers::Vector<uint8_t>> data = 0;
  if (numel.ok() && t.data())
    data = b.CreateVector(static_cast<const uint8_t*>(t.data()),
                          static_cast<size_t>(*numel) * dtype_size(t.dtype()));
  return fb::CreateTensorData(b, to_fb(t.dtype()), dims, data);
}

Off<fb::SubGraph> build_subgraph(Builder& b, const ir::Graph& g);

Off<fb::Attribute> build_attribute(Builder& b, const std::string& name, const ir::Attribute& a) {
  auto n = b.CreateString(name);
  Off<fb::SubGraph> g = 0;
  if (a.kind == ir::Attribute::Kind::kGraph && a.g) g = build_subgraph(b, *a.g);
  Off<flatbuffers::String> s = 0;
  Off<flatbuffers::Vector<int64_t>> ints = 0;
  Off<flatbuffers::Vector<float>> floats = 0;
  Off<flatbuffers::Vector<Off<flatbuffers::String>>> strings = 0;
  Off<fb::TensorData> t = 0;
  // Only the field of the attribute's kind is written.
  switch (a.kind) {
    case ir::Attribute::Kind::kString: s = b.CreateString(a.s); break;
    case ir::Attribute::Kind::kInts: ints = b.CreateVector(a.ints); break;
    case ir::Attribute::Kind::kFloats: floats = b.CreateVector(a.floats); break;
    case ir::Attribute::Kind::kStrings: strings = b.CreateVectorOfStrings(a.strings); break;
    case ir::Attribute::Kind::kTensor: t = build_tensor(b, a.t); break;
    default: break;
  }
  fb::AttributeBuilder ab(b);
  ab.add_name(n);
  ab.add_kind(static_cast<fb::AttributeKind>(a.kind));
  if (a.kind == ir::Attribute::Kind::kInt) ab.add_i(a.i);
  if (a.kind == ir::Attribute::Kind::kFloat) ab.add_f(a.f);
  ab.add_s(s);
  ab.add_ints(ints);
  ab.add_floats(floats);
  ab.add_strings(strings);
  ab.add_t(t);
  ab.add_g(g);
  return ab.Finish();
}

// Strings go through CreateString(std::string), never through the *Direct helpers that take
// a const char*: those would cut a name at an embedded NUL byte. Children are created in
// named statements, not as call arguments (whose evaluation order is unspecified), so the
// bytes do not depend on the compiler.
Off<fb::Node> build_node(Builder& b, const ir::Node& n) {
  std::vector<Off<fb::Attribute>> attrs;
  attrs.reserve(n.attrs.size());
  for (const auto& [name, a] : n.attrs) attrs.push_back(build_attribute(b, name, a));
  auto name = b.CreateString(n.name);
  auto op_type = b.CreateString(n.op_type);
  auto domain = b.CreateString(n.domain);
  auto inputs = b.CreateVector(n.inputs);
  auto outputs = b.CreateVector(n.outputs);
  auto attr_vec = b.CreateVector(attrs);
  return fb::CreateNode(b, name, op_type, domain, n.opset, inputs, outputs, attr_vec);
}

// A sequence / optional value's element dims; nothing for tensors (their plans stay as before).
flatbuffers::Offset<flatbuffers::Vector<int64_t>> seq_dims(Builder& b, const ir::SeqType& t) {
  if (t.is_tensor()) return 0;
  return dims_vec(b, t.elem_dims);
}

// Constants in id order, so that the bytes do not depend on the hash map's order.
Off<fb::SubGraph> build_subgraph(Builder& b, const ir::Graph& g) {
  std::vector<Off<fb::Value>> values;
  std::vector<uint8_t> has_shape;
  for (const ir::Value& v : g.values) {
    auto name = b.CreateString(v.name);
    auto dims = dims_vec(b, v.dims);
    auto elem_dims = seq_dims(b, v.seq);
    values.push_back(fb::CreateValue(b, name, to_fb(v.dtype), dims, 0, fb::ValueKind::Activation, 0, 0, -1,
                                     static_cast<uint8_t>(v.seq.kind), to_fb(v.seq.elem_dtype), elem_dims,
                                     v.seq.elem_has_shape));
    has_shape.push_back(v.has_shape);
  }
  std::vector<Off<fb::Node>> nodes;
  for (const ir::Node& n : g.nodes) nodes.push_back(build_node(b, n));
  std::vector<ir::ValueId> ids;
  for (const auto& [id, t] : g.constants) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<Off<fb::SubGraphConstant>> constants;
  for (ir::ValueId id : ids) {
    auto t = build_tensor(b, g.constants.at(id));
    constants.push_back(fb::CreateSubGraphConstant(b, id, t));
  }
  auto name = b.CreateString(g.name);
  auto value_vec = b.CreateVector(values);
  auto shape_vec = b.CreateVector(has_shape);
  auto inputs = b.CreateVector(g.inputs);
  auto outputs = b.CreateVector(g.outputs);
  auto node_vec = b.CreateVector(nodes);
  auto const_vec = b.CreateVector(constants);
  return fb::CreateSubGraph(b, name, value_vec, shape_vec, inputs, outputs, node_vec, const_vec, g.num_captures);
}

Off<fb::IoTensor> build_io(Builder& b, const IoTensor& io) {
  auto name = b.CreateString(io.name);
  auto dims = dims_vec(b, io.dims);
  auto min = dims_vec(b, io.min);
  auto opt = dims_vec(b, io.opt);
  auto max = dims_vec(b, io.max);
  return fb::CreateIoTensor(b, name, io.value, to_fb(io.dtype), dims, min, opt, max, io.seq_capacity, io.seq_axis);
}

Off<fb::Value> build_value(Builder& b, const ValueEntry& v) {
  auto name = b.CreateString(v.name);
  auto dims = dims_vec(b, v.dims);
  auto max_dims = dims_vec(b, v.max_dims);
  auto elem_dims = seq_dims(b, v.seq);
  return fb::CreateValue(b, name, to_fb(v.dtype), dims, max_dims,
                         static_cast<fb::ValueKind>(v.kind), v.arena_offset, v.arena_size,
                         v.weight_index, static_cast<uint8_t>(v.seq.kind), to_fb(v.seq.elem_dtype), elem_dims,
                         v.seq.elem_has_shape);
}

Off<fb::Weight> build_weight(Builder& b, const WeightEntry& w) {
  auto name = b.CreateString(w.name);
  auto dims = dims_vec(b, w.dims);
  return fb::CreateWeight(b, name, to_fb(w.dtype), dims, w.offset, w.size, w.streamable);
}

template <typename T, typename F>
Off<flatbuffers::Vector<Off<T>>> build_all(Builder& b, const auto& items, F build) {
  std::vector<Off<T>> offs;
  offs.reserve(items.size());
  for (const auto& item : items) offs.push_back(build(b, item));
  return b.CreateVector(offs);
}

// Serializes the metadata of `plan` exactly as given.
flatbuffers::DetachedBuffer build_metadata(const PlanData& plan) {
  Builder b(1024);
  auto name = b.CreateString(plan.name);
  auto version = b.CreateString(plan.streamrt_version);
  auto device_name = b.CreateString(plan.device.name);
  auto device = fb::CreateDevice(b, static_cast<fb::DeviceKind>(plan.device.kind),
                                 plan.device.cc_major, plan.device.cc_minor, device_name);
  auto values = build_all<fb::Value>(b, plan.values, build_value);
  auto inputs = build_all<fb::IoTensor>(b, plan.inputs, build_io);
  auto outputs = build_all<fb::IoTensor>(b, plan.outputs, build_io);
  auto steps = build_all<fb::Node>(b, plan.steps, build_node);
  auto weights = build_all<fb::Weight>(b, plan.weights, build_weight);
  auto step_ms = plan.step_ms.empty() ? 0 : b.CreateVector(plan.step_ms);
  auto root = fb::CreatePlan(b, name, version, device, values, inputs, outputs, steps, weights,
                             plan.arena_size, plan.weights_stripped, step_ms, plan.min_run_ms);
  fb::FinishPlanBuffer(b, root);
  return b.Release();
}

// ---- layout ---------------------------------------------------------------------------

// Computes weights[i].offset/size and checks weight_data against them.
Status compute_weight_layout(PlanData& plan) {
  if (!plan.weights_stripped && plan.weight_data.size() != plan.weights.size())
    return invalid_argument("plan '" + plan.name + "': " + std::to_string(plan.weights.size()) +
                            " weights but " + std::to_string(plan.weight_data.size()) +
                            " weight tensors");
  uint64_t cursor = 0;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    WeightEntry& w = plan.weights[i];
    const std::string where = "plan '" + plan.name + "': weight '" + w.name + "'";
    size_t esize = dtype_size(w.dtype);
    if (esize == 0) return invalid_argument(where + " has no valid dtype");
    auto numel = checked_numel(w.dims, INT64_MAX / static_cast<int64_t>(esize));
    if (!numel.ok()) return numel.status().with_context(where);
    w.offset = align_up(cursor, kWeightAlignment);
    w.size = static_cast<uint64_t>(*numel) * esize;
    cursor = w.offset + w.size;
    if (plan.weights_stripped) continue;
    const Tensor& t = plan.weight_data[i];
    if (t.dtype() != w.dtype || t.dims() != w.dims)
      return invalid_argument(where + " is " + dtype_name(w.dtype) + " " +
                              dims_to_string(w.dims) + " but its data is " +
                              dtype_name(t.dtype()) + " " + dims_to_string(t.dims()));
    if (w.size > 0 && !t.data()) return invalid_argument(where + " has no data");
  }
  return ok_status();
}

// The weights section as a producer of bytes, plus its size.
struct WeightsSource {
  uint64_t size = 0;
  std::function<Status(const Sink&)> emit;
};

WeightsSource weights_from_plan(const PlanData& plan) {
  WeightsSource src;
  if (plan.weights_stripped || plan.weights.empty()) return src;
  const auto& last = plan.weights.back();
  src.size = last.offset + last.size;
  src.emit = [&plan](const Sink& sink) -> Status {
    uint64_t cursor = 0;
    for (size_t i = 0; i < plan.weights.size(); ++i) {
      const WeightEntry& w = plan.weights[i];
      SRT_RETURN_IF_ERROR(write_zeros(sink, w.offset - cursor));
      if (w.size) SRT_RETURN_IF_ERROR(sink(plan.weight_data[i].data(), w.size));
      cursor = w.offset + w.size;
    }
    return ok_status();
  };
  return src;
}

WeightsSource weights_from_bytes(std::span<const uint8_t> bytes) {
  WeightsSource src;
  src.size = bytes.size();
  src.emit = [bytes](const Sink& sink) { return sink(bytes.data(), bytes.size()); };
  return src;
}

// Emits the whole file: header, metadata, padding, weights.
Status emit_plan(const flatbuffers::DetachedBuffer& meta, const WeightsSource& weights,
                 const Sink& sink) {
  PlanHeader h{};
  std::memcpy(h.magic, kPlanMagic, sizeof(h.magic));
  h.format_version = kPlanFormatVersion;
  h.header_size = sizeof(PlanHeader);
  h.metadata_offset = sizeof(PlanHeader);
  h.metadata_size = meta.size();
  h.metadata_checksum = XXH3_64bits(meta.data(), meta.size());
  if (weights.size > 0) {
    h.weights_offset = align_up(h.metadata_offset + h.metadata_size, kWeightsAlignment);
    h.weights_size = weights.size;
    XXH3_state_t* state = XXH3_createState();
    if (!state) return out_of_memory("cannot allocate a checksum state");
    XXH3_64bits_reset(state);
    Status st = weights.emit([state](const void* p, size_t n) {
      XXH3_64bits_update(state, p, n);
      return ok_status();
    });
    h.weights_checksum = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    SRT_RETURN_IF_ERROR(st);
  }
  SRT_RETURN_IF_ERROR(sink(&h, sizeof(h)));
  SRT_RETURN_IF_ERROR(sink(meta.data(), meta.size()));
  if (weights.size > 0) {
    SRT_RETURN_IF_ERROR(write_zeros(sink, h.weights_offset - (h.metadata_offset + h.metadata_size)));
    SRT_RETURN_IF_ERROR(weights.emit(sink));
  }
  return ok_status();
}

Result<std::vector<uint8_t>> emit_to_vector(const flatbuffers::DetachedBuffer& meta,
                                            const WeightsSource& weights) {
  std::vector<uint8_t> out;
  uint64_t total = sizeof(PlanHeader) + meta.size();
  if (weights.size > 0) total = align_up(total, kWeightsAlignment) + weights.size;
  out.reserve(static_cast<size_t>(total));
  SRT_RETURN_IF_ERROR(emit_plan(meta, weights, [&out](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
    return ok_status();
  }));
  return out;
}

}  // namespace

Result<std::vector<uint8_t>> serialize_plan(PlanData& plan) {
  SRT_RETURN_IF_ERROR(compute_weight_layout(plan));
  auto meta = build_metadata(plan);
  return emit_to_vector(meta, weights_from_plan(plan));
}

Result<std::vector<uint8_t>> assemble_plan(const PlanData& plan,
                                           std::span<const uint8_t> weights_section) {
  auto meta = build_metadata(plan);
  return emit_to_vector(meta, weights_from_bytes(weights_section));
}

Status write_plan(PlanData& plan, const std::string& path) {
  SRT_RETURN_IF_ERROR(compute_weight_layout(plan));
  auto meta = build_metadata(plan);
  // Atomic (a temporary renamed over the target): readers never see a partial plan, a crash
  // leaves the old file intact, and a target that is not a regular file is refused.
  return write_file_atomic(path, [&](const WriteSink& sink) {
    return emit_plan(meta, weights_from_plan(plan), sink);
  });
}

}  // namespace streamrt::plan
