// Plan reader: maps a plan file and verifies it in stages (header, checksums, FlatBuffers
// verifier, decoding, semantic checks) before any of it is trusted. See the top of plan.h.
#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/host_memory.h"
#include "core/logging.h"
#include "core/mapped_file.h"
#include "ir/subgraph.h"
#include "plan/plan.h"
#include "plan/plan_generated.h"

namespace streamrt::plan {


namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

std::string num(uint64_t v) { return std::to_string(v); }

// ---- stage 1: the header --------------------------------------------------------------

// A weights section held apart from the plan's bytes (read_plan_external).
struct Apart {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// `apart`: the plan's bytes end with its metadata and the weights section is `apart`.
Result<PlanHeader> check_header(const uint8_t* data, size_t size, const Apart* apart = nullptr) {
  if (size < sizeof(kPlanMagic) || std::memcmp(data, kPlanMagic, sizeof(kPlanMagic)) != 0)
    return invalid_plan("not a streamrt plan (bad magic)");
  PlanHeader h;
  // The version sits right after the magic: read it first so a future format with another
  // header size is reported as incompatible, not as corrupt.
  if (size < sizeof(h.magic) + sizeof(h.format_version))
    return invalid_plan("truncated header (" + num(size) + " of " + num(sizeof(PlanHeader)) +
                        " bytes)");
  uint32_t version = 0;
  std::memcpy(&version, data + sizeof(h.magic), sizeof(version));
  if (version != kPlanFormatVersion)
    return incompatible("plan format version " + num(version) + ", this build reads version " +
                        num(kPlanFormatVersion));
  if (size < sizeof(PlanHeader))
    return invalid_plan("truncated header (" + num(size) + " of " + num(sizeof(PlanHeader)) +
                        " bytes)");
  std::memcpy(&h, data, sizeof(h));
  if (h.header_size != sizeof(PlanHeader))
    return invalid_plan("header_size is " + num(h.header_size) + ", expected " +
                        num(sizeof(PlanHeader)));

  // Metadata section.
  // The metadata follows the header directly (no unchecked gap between them).
  if (h.metadata_offset != sizeof(PlanHeader))
    return invalid_plan("metadata_offset is " + num(h.metadata_offset) + ", expected " +
                        num(sizeof(PlanHeader)) + " (right after the header)");
  if (h.metadata_size == 0) return invalid_plan("metadata_size is 0");
  if (h.metadata_offset > size || h.metadata_size > size - h.metadata_offset)
    return invalid_plan("metadata section (offset " + num(h.metadata_offset) + " + size " +
                        num(h.metadata_size) + ") extends past the end of the file (" + num(size) +
                        " bytes)");
  if (h.metadata_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalid_plan("metadata_size " + num(h.metadata_size) + " exceeds the FlatBuffers limit");
  const uint64_t metadata_end = h.metadata_offset + h.metadata_size;

  // Weights section (absent when weights_size == 0).
  uint64_t file_end = metadata_end;
  if (apart && apart->size != h.weights_size)
    return invalid_plan("the weights section held apart has " + num(apart->size) + " bytes, the header's has " +
                        num(h.weights_size));
  if (h.weights_size == 0) {
    if (h.weights_offset != 0)
      return invalid_plan("weights_offset " + num(h.weights_offset) + " but weights_size 0");
    if (h.weights_checksum != 0)
      return invalid_plan("weights_checksum " + hex(h.weights_checksum) + " but weights_size 0");
  } else {
    if (h.weights_offset % kWeightsAlignment != 0)
      return invalid_plan("weights_offset " + num(h.weights_offset) + " is not " +
                          num(kWeightsAlignment) + "-byte aligned");
    if (h.weights_offset < metadata_end)
      return invalid_plan("weights section (offset " + num(h.weights_offset) +
                          ") overlaps the metadata (which ends at " + num(metadata_end) + ")");
    if (!apart && (h.weights_offset > size || h.weights_size > size - h.weights_offset))
      return invalid_plan("weights section (offset " + num(h.weights_offset) + " + size " +
                          num(h.weights_size) + ") extends past the end of the file (" +
                          num(size) + " bytes)");
    if (!apart) file_end = h.weights_offset + h.weights_size;
  }
  if (file_end != size)
    return invalid_plan(num(size - file_end) + " trailing bytes after the last section (which ends at " +
                        num(file_end) + (apart ? "; the weights are held apart" : "") + ")");
  return h;
}

// XXH3 of the weights section in chunks. For a mapped file the pages of each chunk are dropped
// from the resident set once hashed (they stay in the page cache): loading a plan larger than
// memory, or one whose weights will stream, never holds the whole section resident at once.
uint64_t hash_weights(const uint8_t* data, size_t size, const PlanHeader& h, bool file_backed) {
  if (!file_backed) return XXH3_64bits(data + h.weights_offset, h.weights_size);
  constexpr uint64_t kChunk = 4ull << 20;
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (uint64_t off = 0; off < h.weights_size; off += kChunk) {
    uint64_t n = std::min(kChunk, h.weights_size - off);
    XXH3_64bits_update(state, data + h.weights_offset + off, n);
    release_pages(data, size, h.weights_offset + off, n);
  }
  uint64_t got = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return got;
}

Status check_checksums(const uint8_t* data, size_t size, const PlanHeader& h, bool file_backed,
                       const Apart* apart = nullptr) {
  uint64_t got = XXH3_64bits(data + h.metadata_offset, h.metadata_size);
  if (got != h.metadata_checksum)
    return invalid_plan("metadata checksum mismatch (header " + hex(h.metadata_checksum) +
                        ", computed " + hex(got) + ")");
  if (h.weights_size > 0) {
    // The padding is covered by neither checksum: require zeros, so that no byte of a
    // valid plan can change unnoticed (a plan whose weights are held apart ends before it).
    for (uint64_t i = h.metadata_offset + h.metadata_size; !apart && i < h.weights_offset; ++i)
      if (data[i] != 0) return invalid_plan("non-zero padding byte at offset " + num(i));
    got = apart ? XXH3_64bits(apart->data, apart->size) : hash_weights(data, size, h, file_backed);
    if (got != h.weights_checksum)
      return invalid_plan(std::string(apart ? "weights checksum mismatch in the section held apart" : "weights checksum mismatch") +
                          " (header " + hex(h.weights_checksum) + ", computed " + hex(got) + ")");
  }
  return ok_status();
}

// ---- stage 2: decoding the (verified) FlatBuffer ---------------------------------------

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// Copies a vector of scalars. memcpy because the FlatBuffers 2.0 verifier checks only the
// 4-byte alignment of a vector, not the alignment of 8-byte elements.
template <typename T>
std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  std::vector<T> out;
  if (v && v->size() > 0) {
    out.resize(v->size());
    std::memcpy(out.data(), v->Data(), v->size() * sizeof(T));
  }
  return out;
}

DataType dtype_of(fb::DType t) { return static_cast<DataType>(t); }

// A value's sequence / optional type as stored; plan_verify checks it (ir::check_seq_type).
ir::SeqType seq_of(const fb::Value* v) {
  ir::SeqType t;
  t.kind = static_cast<ValueKind>(v->seq_kind());
  t.elem_dtype = dtype_of(v->elem_dtype());
  t.elem_dims = vec(v->elem_dims());
  t.elem_has_shape = v->elem_has_shape();
  return t;
}

Result<Tensor> decode_tensor(const fb::TensorData* t, const std::string& where) {
  if (!t) return invalid_plan(where + " has kind tensor but holds no tensor");
  int raw = static_cast<int>(t->dtype());
  if (!is_valid_dtype(raw)) return invalid_plan(where + " has invalid dtype " + num(raw));
  DataType dtype = dtype_of(t->dtype());
  Dims dims = vec(t->dims());
  size_t have = t->data() ? t->data()->size() : 0;
  // Validate the claimed size against the bytes actually present before allocating.
  auto esize = static_cast<int64_t>(dtype_size(dtype));
  auto numel = checked_numel(dims, INT64_MAX / esize);
  if (!numel.ok())
    return invalid_plan(where + ": tensor dims " + dims_to_string(dims) +
                        " are not static or overflow");
  uint64_t need = static_cast<uint64_t>(*numel) * static_cast<uint64_t>(esize);
  if (need != have)
    return invalid_plan(where + ": tensor of " + dims_to_string(dims) + " " + dtype_name(dtype) +
                        " needs " + num(need) + " bytes, holds " + num(have));
  auto tensor = Tensor::from_bytes(dtype, dims, have ? t->data()->Data() : nullptr, have);
  if (!tensor.ok()) return invalid_plan(where + ": " + tensor.status().message());
  return tensor;
}

Result<std::shared_ptr<const ir::Graph>> decode_subgraph(const fb::SubGraph* g, const std::string& where, int depth);

// `where` names the step (or the body's node); `depth` is how deep in bodies the node sits.
Result<ir::Node> decode_node(const fb::Node* n, const std::string& at, int depth) {
  ir::Node node;
  node.name = str(n->name());
  node.op_type = str(n->op_type());
  node.domain = str(n->domain());
  node.opset = n->opset();
  node.inputs = vec(n->inputs());
  node.outputs = vec(n->outputs());
  if (!n->attributes()) return node;
  for (const fb::Attribute* a : *n->attributes()) {
    std::string name = str(a->name());
    std::string where = at + " '" + node.name + "' attribute '" + name + "'";
    if (node.attrs.count(name)) return invalid_plan(where + " appears twice");
    int raw_kind = static_cast<int>(a->kind());
    if (raw_kind > static_cast<int>(ir::Attribute::Kind::kGraph))
      return invalid_plan(where + " has invalid kind " + num(raw_kind));
    ir::Attribute attr;
    attr.kind = static_cast<ir::Attribute::Kind>(raw_kind);
    switch (attr.kind) {
      case ir::Attribute::Kind::kInt: attr.i = a->i(); break;
      case ir::Attribute::Kind::kFloat: attr.f = a->f(); break;
      case ir::Attribute::Kind::kString: attr.s = str(a->s()); break;
      case ir::Attribute::Kind::kInts: attr.ints = vec(a->ints()); break;
      case ir::Attribute::Kind::kFloats: attr.floats = vec(a->floats()); break;
      case ir::Attribute::Kind::kStrings:
        if (a->strings())
          for (const flatbuffers::String* s : *a->strings()) attr.strings.push_back(str(s));
        break;
      case ir::Attribute::Kind::kTensor: {
        SRT_ASSIGN_OR_RETURN(attr.t, decode_tensor(a->t(), where));
        break;
      }
      case ir::Attribute::Kind::kGraph: {
        SRT_ASSIGN_OR_RETURN(attr.g, decode_subgraph(a->g(), where, depth + 1));
        break;
      }
    }
    node.attrs.emplace(std::move(name), std::move(attr));
  }
  return node;
}

Result<ir::Node> decode_node(const fb::Node* n, size_t index) { return decode_node(n, "step " + num(index), 0); }

// A body as written; plan_verify checks its structure (ir::check_subgraph) with the steps.
Result<std::shared_ptr<const ir::Graph>> decode_subgraph(const fb::SubGraph* sg, const std::string& where, int depth) {
  if (!sg) return invalid_plan(where + " has kind graph but holds no graph");
  if (depth > ir::kMaxSubgraphDepth)
    return invalid_plan(where + ": subgraphs nest deeper than " + num(ir::kMaxSubgraphDepth) + " levels");
  auto g = std::make_shared<ir::Graph>();
  g->name = str(sg->name());
  const size_t nv = sg->values() ? sg->values()->size() : 0;
  if (!sg->has_shape() || sg->has_shape()->size() != nv)
    return invalid_plan(where + ": has_shape does not list every one of the " + num(nv) + " values");
  for (size_t i = 0; i < nv; ++i) {
    const fb::Value* v = sg->values()->Get(static_cast<flatbuffers::uoffset_t>(i));
    int raw = static_cast<int>(v->dtype());
    if (raw != 0 && !is_valid_dtype(raw))  // 0: a body value whose type the model leaves open
      return invalid_plan(where + " value " + num(i) + " has invalid dtype " + num(raw));
    g->add_value(str(v->name()), dtype_of(v->dtype()), vec(v->dims()),
                 sg->has_shape()->Get(static_cast<flatbuffers::uoffset_t>(i)));
    g->values.back().seq = seq_of(v);
    if (Status st = ir::check_seq_type(g->values.back(), where + " value " + num(i)); !st.ok())
      return invalid_plan(st.message());
  }
  g->inputs = vec(sg->inputs());
  g->outputs = vec(sg->outputs());
  g->num_captures = sg->num_captures();
  if (sg->constants())
    for (const fb::SubGraphConstant* c : *sg->constants()) {
      const std::string at = where + " constant " + num(c->value());
      if (c->value() < 0 || static_cast<size_t>(c->value()) >= nv) return invalid_plan(at + " is out of range");
      if (g->is_constant(c->value())) return invalid_plan(at + " is given twice");
      SRT_ASSIGN_OR_RETURN(Tensor t, decode_tensor(c->t(), at));
      g->constants[c->value()] = std::move(t);
    }
  if (sg->nodes())
    for (const fb::Node* n : *sg->nodes()) {
      SRT_ASSIGN_OR_RETURN(ir::Node node, decode_node(n, where + " node " + num(g->nodes.size()), depth));
      g->nodes.push_back(std::move(node));
    }
  return std::shared_ptr<const ir::Graph>(std::move(g));
}

IoTensor decode_io(const fb::IoTensor* io) {
  IoTensor t;
  t.name = str(io->name());
  t.value = io->value();
  t.dtype = dtype_of(io->dtype());
  t.dims = vec(io->dims());
  t.min = vec(io->min());
  t.opt = vec(io->opt());
  t.max = vec(io->max());
  t.seq_capacity = io->seq_capacity();  // verify_plan checks it against dims and steps
  t.seq_axis = io->seq_axis();
  return t;
}

// Every size below is a FlatBuffer vector length, already bounded by the verified buffer.
Result<PlanData> decode_plan(const fb::Plan* p) {
  PlanData plan;
  plan.name = str(p->name());
  plan.streamrt_version = str(p->streamrt_version());
  if (const fb::Device* d = p->device()) {
    int raw = static_cast<int>(d->kind());
    if (raw > static_cast<int>(DeviceKind::kCuda))
      return invalid_plan("device kind " + num(raw) + " is unknown");
    plan.device.kind = static_cast<DeviceKind>(raw);
    plan.device.cc_major = d->cc_major();
    plan.device.cc_minor = d->cc_minor();
    plan.device.name = str(d->name());
  }
  if (p->values()) {
    plan.values.reserve(p->values()->size());
    for (const fb::Value* v : *p->values()) {
      ValueEntry e;
      e.name = str(v->name());
      e.dtype = dtype_of(v->dtype());
      e.dims = vec(v->dims());
      e.max_dims = vec(v->max_dims());
      e.kind = static_cast<ValueEntry::Kind>(v->kind());
      e.arena_offset = v->arena_offset();
      e.arena_size = v->arena_size();
      e.weight_index = v->weight_index();
      e.seq = seq_of(v);
      plan.values.push_back(std::move(e));
    }
  }
  if (p->inputs())
    for (const fb::IoTensor* io : *p->inputs()) plan.inputs.push_back(decode_io(io));
  if (p->outputs())
    for (const fb::IoTensor* io : *p->outputs()) plan.outputs.push_back(decode_io(io));
  if (p->steps()) {
    plan.steps.reserve(p->steps()->size());
    for (const fb::Node* n : *p->steps()) {
      SRT_ASSIGN_OR_RETURN(ir::Node node, decode_node(n, plan.steps.size()));
      plan.steps.push_back(std::move(node));
    }
  }
  if (p->weights()) {
    plan.weights.reserve(p->weights()->size());
    for (const fb::Weight* w : *p->weights()) {
      WeightEntry e;
      e.name = str(w->name());
      e.dtype = dtype_of(w->dtype());
      e.dims = vec(w->dims());
      e.offset = w->offset();
      e.size = w->size();
      e.streamable = w->streamable();
      plan.weights.push_back(std::move(e));
    }
  }
  plan.arena_size = p->arena_size();
  plan.weights_stripped = p->weights_stripped();
  if (p->step_ms()) plan.step_ms.assign(p->step_ms()->begin(), p->step_ms()->end());
  plan.min_run_ms = p->min_run_ms();
  return plan;
}

// ---- all stages ----------------------------------------------------------------------

// `apart` / `weights_holder`: the weights section held apart (read_plan_external) and its owner.
Result<LoadedPlan> read_impl(const uint8_t* data, size_t size, std::shared_ptr<const void> holder,
                             bool file_backed, const Apart* apart = nullptr,
                             std::shared_ptr<const void> weights_holder = nullptr) {
  SRT_ASSIGN_OR_RETURN(PlanHeader h, check_header(data, size, apart));
  SRT_RETURN_IF_ERROR(check_checksums(data, size, h, file_backed, apart));

  const uint8_t* meta = data + h.metadata_offset;
  flatbuffers::Verifier verifier(meta, static_cast<size_t>(h.metadata_size));
  // The identifier sits at bytes 4..7; a shorter buffer is left to the verifier to reject.
  if (h.metadata_size >= 8 && !fb::PlanBufferHasIdentifier(meta))
    return invalid_plan("metadata does not carry the FlatBuffers identifier 'SRTP'");
  if (!fb::VerifyPlanBuffer(verifier))
    return invalid_plan("metadata (" + num(h.metadata_size) +
                        " bytes) fails the FlatBuffers verifier");

  SRT_ASSIGN_OR_RETURN(PlanData plan, decode_plan(fb::GetPlan(meta)));
  if (plan.weights_stripped && h.weights_size != 0)
    return invalid_plan("weights_stripped is set but the file has a weights section of " +
                        num(h.weights_size) + " bytes");
  SRT_RETURN_IF_ERROR(verify_plan(plan, h.weights_size));

  if (!plan.weights_stripped) {
    // Weights are used in place: views into the mapping (verify_plan checked the bounds).
    plan.weight_data.reserve(plan.weights.size());
    const uint8_t* section = apart ? apart->data : data + (h.weights_size ? h.weights_offset : 0);
    const std::shared_ptr<const void>& owner = apart ? weights_holder : holder;
    for (const WeightEntry& w : plan.weights)
      plan.weight_data.push_back(Tensor::view(w.dtype, w.dims, section + w.offset, owner));
  }
  // The steps' shape rules read shape tensors among the weights.
  SRT_RETURN_IF_ERROR(verify_plan_steps(plan));
  LoadedPlan out;
  out.data = std::move(plan);
  out.mapping = std::move(holder);
  out.file_size = size;
  out.base = data;
  out.file_backed = file_backed;
  if (apart && apart->size) {
    out.external_weights = apart->data;
    out.external_weights_size = apart->size;
  }
  return out;
}

// `data` itself when `alignment`-aligned, else an aligned copy whose owner replaces `holder`.
// The copy is the size of the bytes we were handed, not of anything they claim.
Result<const uint8_t*> aligned(const uint8_t* data, uint64_t size, uint64_t alignment,
                               std::shared_ptr<const void>& holder, const char* what) {
  if (reinterpret_cast<uintptr_t>(data) % alignment == 0) return data;
  if (size > SIZE_MAX - kWeightAlignment) return out_of_memory(std::string(what) + ": cannot copy " + num(size) + " bytes");
  size_t alloc = (size + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  void* p = std::aligned_alloc(kWeightAlignment, alloc ? alloc : kWeightAlignment);
  if (!p) return out_of_memory(std::string(what) + ": cannot copy " + num(size) + " bytes");
  std::memcpy(p, data, size);
  holder = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  return static_cast<const uint8_t*>(p);
}

}  // namespace

Result<LoadedPlan> read_plan(const std::string& path) {
  SRT_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const uint8_t* data = file->data();
  size_t size = file->size();
  std::shared_ptr<const void> holder(file, data);  // aliasing: owns the mapping
  auto r = read_impl(data, size, std::move(holder), true);
  if (!r.ok()) return r.status().with_context("plan '" + path + "'");
  return r;
}

Result<LoadedPlan> read_plan_bytes(const uint8_t* data, size_t size,
                                   std::shared_ptr<const void> holder) {
  if (!data && size > 0) return invalid_argument("plan: null data with non-zero size");
  // Keep the guarantee that weights (and FlatBuffer scalars) are aligned: copy otherwise.
  SRT_ASSIGN_OR_RETURN(data, aligned(data, size, kWeightAlignment, holder, "plan"));
  auto r = read_impl(data, size, std::move(holder), false);
  if (!r.ok()) return r.status().with_context("plan");
  return r;
}

Result<PlanParts> plan_parts(const uint8_t* data, size_t size) {
  if (!data && size > 0) return invalid_argument("plan: null data with non-zero size");
  auto h = check_header(data, size);
  if (!h.ok()) return h.status().with_context("plan");
  return PlanParts{h->metadata_offset + h->metadata_size, h->weights_offset, h->weights_size};
}

Result<LoadedPlan> read_plan_external(const uint8_t* data, size_t size, std::shared_ptr<const void> holder,
                                      const uint8_t* weights, uint64_t weights_size,
                                      std::shared_ptr<const void> weights_holder) {
  if ((!data && size > 0) || (!weights && weights_size > 0))
    return invalid_argument("plan: null data with non-zero size");
  SRT_ASSIGN_OR_RETURN(data, aligned(data, size, kWeightAlignment, holder, "plan"));
  if (reinterpret_cast<uintptr_t>(weights) % kExternalWeightsAlignment != 0)
    log_warning("plan: the weights held apart are not " + num(kExternalWeightsAlignment) +
                "-byte aligned: copying them (" + num(weights_size) + " bytes)");
  SRT_ASSIGN_OR_RETURN(weights, aligned(weights, weights_size, kExternalWeightsAlignment, weights_holder, "plan weights"));
  const Apart apart{weights, weights_size};
  auto r = read_impl(data, size, std::move(holder), false, &apart, std::move(weights_holder));
  if (!r.ok()) return r.status().with_context("plan");
  return r;
}

}  // namespace streamrt::plan
