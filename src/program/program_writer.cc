// Program writer: ProgramData -> header + FlatBuffer + aligned segments section.
// The file layout is documented at the top of program_format.h.
#include <xxhash.h>

#include <bit>
#include <cstring>

#include "core/file_io.h"
#include "program/program_format.h"
#include "program/program_generated.h"

namespace streamrt::program {

static_assert(static_cast<int>(fb::DType::Bool) == static_cast<int>(DataType::kBool));
static_assert(static_cast<int>(fb::DType::MAX) == static_cast<int>(kLastDataType));
static_assert(static_cast<int>(fb::DType::Float64) == static_cast<int>(DataType::kFloat64));
static_assert(static_cast<int>(fb::ValueTag::TensorList) == static_cast<int>(EValue::Tag::kTensorList));
static_assert(static_cast<int>(fb::AttributeKind::Tensor) == static_cast<int>(ir::Attribute::Kind::kTensor));
static_assert(std::endian::native == std::endian::little, "the program format is little endian");

namespace {

using Builder = flatbuffers::FlatBufferBuilder;
template <typename T>
using Off = flatbuffers::Offset<T>;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Children are created in named statements (argument evaluation order is unspecified, and
// the bytes must not depend on the compiler); strings go through CreateString(std::string) so
// a NUL inside a name survives.
Off<fb::Value> build_value(Builder& b, const ValueData& v) {
  auto name = b.CreateString(v.name);
  auto dims = b.CreateVector(v.dims);
  auto ints = b.CreateVector(v.int_list);
  auto doubles = b.CreateVector(v.double_list);
  std::vector<uint8_t> bools(v.bool_list.begin(), v.bool_list.end());
  auto bool_vec = b.CreateVector(bools);
  auto tensors = b.CreateVector(v.tensor_list);
  fb::ValueBuilder vb(b);
  vb.add_tag(static_cast<fb::ValueTag>(v.tag));
  vb.add_name(name);
  vb.add_dtype(static_cast<fb::DType>(v.dtype));
  vb.add_dims(dims);
  vb.add_constant_segment(v.constant_segment);
  vb.add_int_value(v.int_value);
  vb.add_double_value(v.double_value);
  vb.add_bool_value(v.bool_value);
  vb.add_int_list(ints);
  vb.add_double_list(doubles);
  vb.add_bool_list(bool_vec);
  vb.add_tensor_list(tensors);
  return vb.Finish();
}

Off<fb::TensorData> build_tensor(Builder& b, const Tensor& t) {
  if (t.empty()) return 0;
  auto dims = b.CreateVector(t.dims());
  auto numel = checked_numel(t.dims(), INT64_MAX / 8);
  Off<flatbuffers::Vector<uint8_t>> data = 0;
  if (numel.ok() && t.data())
    data = b.CreateVector(static_cast<const uint8_t*>(t.data()), static_cast<size_t>(*numel) * dtype_size(t.dtype()));
  return fb::CreateTensorData(b, static_cast<fb::DType>(t.dtype()), dims, data);
}

Off<fb::Attribute> build_attribute(Builder& b, const std::string& name, const ir::Attribute& a) {
  using K = ir::Attribute::Kind;
  auto n = b.CreateString(name);
  auto s = a.kind == K::kString ? b.CreateString(a.s) : 0;
  auto ints = a.kind == K::kInts ? b.CreateVector(a.ints) : 0;
  auto floats = a.kind == K::kFloats ? b.CreateVector(a.floats) : 0;
  auto strings = a.kind == K::kStrings ? b.CreateVectorOfStrings(a.strings) : 0;
  auto t = a.kind == K::kTensor ? build_tensor(b, a.t) : 0;
  return fb::CreateAttribute(b, n, static_cast<fb::AttributeKind>(a.kind), a.kind == K::kInt ? a.i : 0,
                             a.kind == K::kFloat ? a.f : 0.f, s, ints, floats, strings, t);
}

Off<fb::Instruction> build_instruction(Builder& b, const Instruction& ins) {
  if (ins.kind == Instruction::Kind::kDelegateCall) {
    auto inputs = b.CreateVector(ins.delegate.inputs);
    auto outputs = b.CreateVector(ins.delegate.outputs);
    auto call = fb::CreateDelegateCall(b, ins.delegate.delegate, inputs, outputs);
    return fb::CreateInstruction(b, 0, call);
  }
  const ir::Node& n = ins.kernel;
  std::vector<Off<fb::Attribute>> attrs;
  for (const auto& [name, a] : n.attrs) attrs.push_back(build_attribute(b, name, a));
  auto name = b.CreateString(n.name);
  auto op_type = b.CreateString(n.op_type);
  auto domain = b.CreateString(n.domain);
  auto inputs = b.CreateVector(n.inputs);
  auto outputs = b.CreateVector(n.outputs);
  auto attr_vec = b.CreateVector(attrs);
  auto call = fb::CreateKernelCall(b, name, op_type, domain, n.opset, inputs, outputs, attr_vec);
  return fb::CreateInstruction(b, call, 0);
}

Off<fb::Delegate> build_delegate(Builder& b, const DelegateData& d) {
  std::vector<Off<fb::CompileSpec>> specs;
  for (const CompileSpec& s : d.compile_specs) {
    auto key = b.CreateString(s.key);
    auto value = b.CreateVector(s.value);
    specs.push_back(fb::CreateCompileSpec(b, key, value));
  }
  auto backend = b.CreateString(d.backend);
  auto spec_vec = b.CreateVector(specs);
  return fb::CreateDelegate(b, backend, d.segment, spec_vec);
}

template <typename T, typename Items, typename F>
Off<flatbuffers::Vector<Off<T>>> build_all(Builder& b, const Items& items, F build) {
  std::vector<Off<T>> offs;
  offs.reserve(items.size());
  for (const auto& item : items) offs.push_back(build(b, item));
  return b.CreateVector(offs);
}

Off<fb::Method> build_method(Builder& b, const MethodData& m) {
  auto name = b.CreateString(m.name);
  auto values = build_all<fb::Value>(b, m.values, build_value);
  auto inputs = b.CreateVector(m.inputs);
  auto outputs = b.CreateVector(m.outputs);
  auto instructions = build_all<fb::Instruction>(b, m.instructions, build_instruction);
  auto delegates = build_all<fb::Delegate>(b, m.delegates, build_delegate);
  return fb::CreateMethod(b, name, values, inputs, outputs, instructions, delegates);
}

flatbuffers::DetachedBuffer build_flatbuffer(const ProgramData& p) {
  Builder b(1024);
  auto version = b.CreateString(p.streamrt_version);
  auto methods = build_all<fb::Method>(b, p.methods, build_method);
  auto segments = build_all<fb::Segment>(b, p.segments, [](Builder& bb, const SegmentData& s) {
    return fb::CreateSegment(bb, s.offset, s.size, s.checksum);
  });
  fb::FinishProgramBuffer(b, fb::CreateProgram(b, version, methods, segments));
  return b.Release();
}

std::vector<uint8_t> emit(const flatbuffers::DetachedBuffer& fbuf, std::span<const uint8_t> section) {
  return write_container(kProgramFormat, {fbuf.data(), fbuf.size()}, section);
}

// The program format has no subgraph attribute: a kernel call of If / Loop / Scan cannot be
// written (they run inside a delegate's engine plan instead).
Status refuse_subgraphs(const ProgramData& program) {
  for (const MethodData& m : program.methods)
    for (const Instruction& ins : m.instructions)
      if (ins.kind == Instruction::Kind::kKernelCall)
        for (const auto& [name, a] : ins.kernel.attrs)
          if (a.kind == ir::Attribute::Kind::kGraph)
            return unsupported("program: " + ins.kernel.describe() + " attribute '" + name +
                               "' is a subgraph, which programs cannot hold");
  return ok_status();
}

}  // namespace

Result<std::vector<uint8_t>> serialize_program(ProgramData& program,
                                               const std::vector<std::vector<uint8_t>>& segments) {
  SRT_RETURN_IF_ERROR(refuse_subgraphs(program));
  if (segments.size() != program.segments.size())
    return invalid_argument("program: " + std::to_string(program.segments.size()) + " segments declared, " +
                            std::to_string(segments.size()) + " given");
  std::vector<uint8_t> section;
  for (size_t i = 0; i < segments.size(); ++i) {
    SegmentData& s = program.segments[i];
    s.offset = align_up(section.size(), kSegmentAlignment);
    s.size = segments[i].size();
    s.checksum = XXH3_64bits(segments[i].data(), segments[i].size());
    section.resize(s.offset, 0);
    section.insert(section.end(), segments[i].begin(), segments[i].end());
  }
  return emit(build_flatbuffer(program), section);
}

Result<std::vector<uint8_t>> assemble_program(const ProgramData& program,
                                              std::span<const uint8_t> segments_section) {
  SRT_RETURN_IF_ERROR(refuse_subgraphs(program));
  return emit(build_flatbuffer(program), segments_section);
}

Status write_program(ProgramData& program, const std::vector<std::vector<uint8_t>>& segments,
                     const std::string& path) {
  SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_program(program, segments));
  // Atomic (core/file_io.h): readers never see half a program, a crash leaves the old file
  // intact, and a target that is not a regular file is refused.
  return write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace streamrt::program
