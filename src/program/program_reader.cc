// Program reader: verifies a program file in stages (header, checksum, FlatBuffers verifier,
// decoding, semantic checks, segment bytes) before any of it is trusted. See program_format.h.
#include <xxhash.h>

#include <algorithm>
#include <new>
#include <cstring>
#include <numeric>

#include "core/mapped_file.h"
#include "program/program_format.h"
#include "program/program_generated.h"

namespace streamrt::program {
namespace {

std::string num(uint64_t v) { return std::to_string(v); }

// ---- stage 2: decoding the verified FlatBuffer ------------------------------------------

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// memcpy: the FlatBuffers 2.0 verifier checks a vector's 4-byte alignment only, not that of
// 8-byte elements.
template <typename T, typename U = T>
std::vector<U> vec(const flatbuffers::Vector<T>* v) {
  std::vector<T> raw;
  if (v && v->size() > 0) {
    raw.resize(v->size());
    std::memcpy(raw.data(), v->Data(), v->size() * sizeof(T));
  }
  return std::vector<U>(raw.begin(), raw.end());
}

template <typename T>
size_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

Result<Tensor> decode_tensor(const fb::TensorData* t, const std::string& where) {
  if (!t) return invalid_program(where + " has kind tensor but holds no tensor");
  int raw = static_cast<int>(t->dtype());
  if (!is_valid_dtype(raw) || raw == 0) return invalid_program(where + " has invalid dtype " + num(raw));
  const auto dtype = static_cast<DataType>(raw);
  Dims dims = vec(t->dims());
  const size_t have = count(t->data());
  auto numel = checked_numel(dims, INT64_MAX / static_cast<int64_t>(dtype_size(dtype)));
  if (!numel.ok()) return invalid_program(where + ": tensor dims " + dims_to_string(dims) + " are not static or overflow");
  const uint64_t need = static_cast<uint64_t>(*numel) * dtype_size(dtype);
  if (need != have)
    return invalid_program(where + ": tensor of " + dims_to_string(dims) + " " + dtype_name(dtype) + " needs " +
                           num(need) + " bytes, holds " + num(have));
  auto tensor = Tensor::from_bytes(dtype, dims, have ? t->data()->Data() : nullptr, have);
  if (!tensor.ok()) return invalid_program(where + ": " + tensor.status().message());
  return tensor;
}

Result<ir::Attribute> decode_attribute(const fb::Attribute* a, const std::string& where) {
  using K = ir::Attribute::Kind;
  const int raw = static_cast<int>(a->kind());
  if (raw > static_cast<int>(K::kTensor)) return invalid_program(where + " has invalid kind " + num(raw));
  ir::Attribute attr;
  attr.kind = static_cast<K>(raw);
  if (attr.kind == K::kInt) attr.i = a->i();
  if (attr.kind == K::kFloat) attr.f = a->f();
  if (attr.kind == K::kString) attr.s = str(a->s());
  if (attr.kind == K::kInts) attr.ints = vec(a->ints());
  if (attr.kind == K::kFloats) attr.floats = vec(a->floats());
  if (attr.kind == K::kStrings && a->strings())
    for (const flatbuffers::String* s : *a->strings()) attr.strings.push_back(str(s));
  if (attr.kind == K::kTensor) {
    SRT_ASSIGN_OR_RETURN(attr.t, decode_tensor(a->t(), where));
  }
  return attr;
}

Result<Instruction> decode_instruction(const fb::Instruction* ins, const std::string& where) {
  Instruction out;
  const fb::KernelCall* k = ins->kernel();
  const fb::DelegateCall* d = ins->delegate();
  if ((k != nullptr) == (d != nullptr))
    return invalid_program(where + " must be exactly one of a kernel call and a delegate call");
  if (d) {
    out.kind = Instruction::Kind::kDelegateCall;
    out.delegate.delegate = d->delegate();
    out.delegate.inputs = vec(d->inputs());
    out.delegate.outputs = vec(d->outputs());
    return out;
  }
  ir::Node& n = out.kernel;
  n.name = str(k->name());
  n.op_type = str(k->op_type());
  n.domain = str(k->domain());
  n.opset = k->opset();
  n.inputs = vec(k->inputs());
  n.outputs = vec(k->outputs());
  if (k->attributes())
    for (const fb::Attribute* a : *k->attributes()) {
      const std::string name = str(a->name());
      const std::string at = where + " attribute '" + name + "'";
      if (n.attrs.count(name)) return invalid_program(at + " appears twice");
      SRT_ASSIGN_OR_RETURN(ir::Attribute attr, decode_attribute(a, at));
      n.attrs.emplace(name, std::move(attr));
    }
  return out;
}

Result<ValueData> decode_value(const fb::Value* v, const std::string& where) {
  ValueData out;
  const int tag = static_cast<int>(v->tag());
  if (tag > static_cast<int>(EValue::Tag::kTensorList)) return invalid_program(where + " has invalid tag " + num(tag));
  out.tag = static_cast<EValue::Tag>(tag);
  out.name = str(v->name());
  out.dtype = static_cast<DataType>(v->dtype());
  out.dims = vec(v->dims());
  out.constant_segment = v->constant_segment();
  out.int_value = v->int_value();
  out.double_value = v->double_value();
  out.bool_value = v->bool_value();
  out.int_list = vec(v->int_list());
  out.double_list = vec(v->double_list());
  out.bool_list = vec<uint8_t, bool>(v->bool_list());
  out.tensor_list = vec(v->tensor_list());
  return out;
}

Result<DelegateData> decode_delegate(const fb::Delegate* d) {
  DelegateData out;
  out.backend = str(d->backend());
  out.segment = d->segment();
  if (d->compile_specs())
    for (const fb::CompileSpec* s : *d->compile_specs()) out.compile_specs.push_back({str(s->key()), vec(s->value())});
  return out;
}

// Every size below is a FlatBuffer vector length, already bounded by the verified buffer.
Result<MethodData> decode_method(const fb::Method* m, size_t index) {
  MethodData out;
  out.name = str(m->name());
  const std::string where = "method " + num(index) + " '" + out.name + "'";
  if (m->values())
    for (const fb::Value* v : *m->values()) {
      SRT_ASSIGN_OR_RETURN(ValueData vd, decode_value(v, where + " value " + num(out.values.size())));
      out.values.push_back(std::move(vd));
    }
  out.inputs = vec(m->inputs());
  out.outputs = vec(m->outputs());
  if (m->instructions())
    for (const fb::Instruction* ins : *m->instructions()) {
      SRT_ASSIGN_OR_RETURN(Instruction i, decode_instruction(ins, where + " instruction " + num(out.instructions.size())));
      out.instructions.push_back(std::move(i));
    }
  if (m->delegates())
    for (const fb::Delegate* d : *m->delegates()) {
      SRT_ASSIGN_OR_RETURN(DelegateData dd, decode_delegate(d));
      out.delegates.push_back(std::move(dd));
    }
  return out;
}

Result<ProgramData> decode_program(const fb::Program* p) {
  ProgramData out;
  out.streamrt_version = str(p->streamrt_version());
  if (p->methods())
    for (const fb::Method* m : *p->methods()) {
      SRT_ASSIGN_OR_RETURN(MethodData md, decode_method(m, out.methods.size()));
      out.methods.push_back(std::move(md));
    }
  if (p->segments())
    for (const fb::Segment* s : *p->segments()) out.segments.push_back({s->offset(), s->size(), s->checksum()});
  return out;
}

// ---- stage 3: the segments' bytes ---------------------------------------------------------

// Checksums, and zeros everywhere no segment covers (verify_program checked the bounds).
Status check_segment_bytes(const ProgramData& p, const uint8_t* section, uint64_t section_size) {
  std::vector<size_t> order(p.segments.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p.segments[a].offset < p.segments[b].offset; });
  uint64_t cursor = 0;
  for (size_t i : order) {
    const SegmentData& s = p.segments[i];
    if (s.offset < cursor)
      return invalid_program("segment " + num(i) + " (offset " + num(s.offset) + ") overlaps another segment");
    for (uint64_t b = cursor; b < s.offset; ++b)
      if (section[b] != 0) return invalid_program("non-zero byte between segments at section offset " + num(b));
    const uint64_t got = XXH3_64bits(section + s.offset, s.size);
    if (got != s.checksum)
      return invalid_program("segment " + num(i) + " checksum mismatch (table " + num(s.checksum) + ", computed " +
                             num(got) + ")");
    cursor = s.offset + s.size;
  }
  for (uint64_t b = cursor; b < section_size; ++b)
    if (section[b] != 0) return invalid_program("non-zero byte after the last segment at section offset " + num(b));
  return ok_status();
}

Result<LoadedProgram> read_impl(const uint8_t* data, size_t size, std::shared_ptr<const void> holder) {
  SRT_ASSIGN_OR_RETURN(ContainerView c, read_container(kProgramFormat, {data, size}));
  const uint8_t* fbuf = c.flatbuffer.data();
  flatbuffers::Verifier verifier(fbuf, c.flatbuffer.size());
  if (!fb::VerifyProgramBuffer(verifier))
    return invalid_program("program (" + num(c.flatbuffer.size()) + " bytes) fails the FlatBuffers verifier");
  SRT_ASSIGN_OR_RETURN(ProgramData p, decode_program(fb::GetProgram(fbuf)));
  SRT_RETURN_IF_ERROR(verify_program(p, c.section.size()));
  const uint8_t* section = c.section.empty() ? nullptr : c.section.data();
  SRT_RETURN_IF_ERROR(check_segment_bytes(p, section, c.section.size()));
  LoadedProgram out;
  out.data = std::move(p);
  out.segments = section;
  out.holder = std::move(holder);
  out.file_size = size;
  return out;
}

}  // namespace

Result<LoadedProgram> read_program(const std::string& path) {
  SRT_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const uint8_t* data = file->data();
  std::shared_ptr<const void> holder(file, data);  // aliasing: owns the mapping
  auto r = read_impl(data, file->size(), std::move(holder));
  if (!r.ok()) return r.status().with_context("program '" + path + "'");
  return r;
}

Result<LoadedProgram> read_program_bytes(const uint8_t* data, size_t size, std::shared_ptr<const void> holder) {
  if (!data && size > 0) return invalid_argument("program: null data with non-zero size");
  if (reinterpret_cast<uintptr_t>(data) % kSegmentAlignment != 0) {
    // Segments (constant tensors, engine records) stay aligned: work on an aligned copy of the
    // bytes we were handed (its size is theirs, not one the bytes claim).
    std::shared_ptr<uint8_t[]> copy(new (std::align_val_t{kSegmentAlignment}) uint8_t[size + 1],
                                    [](uint8_t* q) { ::operator delete[](q, std::align_val_t{kSegmentAlignment}); });
    if (size) std::memcpy(copy.get(), data, size);
    data = copy.get();
    holder = std::move(copy);
  }
  auto r = read_impl(data, size, std::move(holder));
  if (!r.ok()) return r.status().with_context("program");
  return r;
}

}  // namespace streamrt::program
