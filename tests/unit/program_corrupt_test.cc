// The corrupt-program set: every malformed program is rejected with kInvalidProgram (or
// kIncompatible) and a message naming the problem; none crashes or reads out of bounds (run
// under ASan). Semantic cases mutate ProgramData before serializing (or assemble a file around
// it as given), so the checksum is right and the late checks are reached; cases the writer
// cannot express are built with the FlatBuffers API directly.
#include <gtest/gtest.h>

#include "program/program_generated.h"
#include "program_test_util.h"

namespace streamrt {
namespace {

namespace fb = program::fb;
using program::ContainerHeader;
using program::ProgramData;
using testing::program_header;
using testing::put_program_header;
using testing::reseal_program;
using testing::sample_program;

Status read_status(const std::vector<uint8_t>& bytes) {
  auto r = program::read_program_bytes(bytes.data(), bytes.size(), nullptr);
  return r.ok() ? ok_status() : r.status();
}

void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& needle,
                     StatusCode code = StatusCode::kInvalidProgram) {
  Status st = read_status(bytes);
  ASSERT_FALSE(st.ok()) << "accepted a program that should fail with: " << needle;
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
  EXPECT_EQ(st.message().rfind("program: ", 0), 0u) << st.to_string();
}

std::vector<uint8_t> valid_bytes() { return sample_program().bytes(); }

// sample_program() after `mutate`, serialized (segment table recomputed).
template <typename F>
std::vector<uint8_t> mutated(F mutate) {
  auto p = sample_program();
  mutate(p.data);
  return p.bytes();
}

// sample_program() serialized, then its data mutated and assembled around the same segments
// section, the segment table kept as mutated.
template <typename F>
std::vector<uint8_t> assembled(F mutate) {
  auto p = sample_program();
  auto bytes = p.bytes();
  const ContainerHeader h = program_header(bytes);
  std::vector<uint8_t> section(bytes.begin() + static_cast<std::ptrdiff_t>(h.section_offset), bytes.end());
  mutate(p.data, section);
  return program::assemble_program(p.data, section).value();
}

// A program whose FlatBuffer is built by hand: one method "m" with one f32 input value and the
// given instructions.
template <typename F>
std::vector<uint8_t> hand_built(F instructions) {
  flatbuffers::FlatBufferBuilder b;
  auto name = b.CreateString("x");
  auto dims = b.CreateVector(std::vector<int64_t>{2});
  fb::ValueBuilder vb(b);
  vb.add_tag(fb::ValueTag::Tensor);
  vb.add_name(name);
  vb.add_dtype(fb::DType::Float32);
  vb.add_dims(dims);
  auto value = vb.Finish();
  auto values = b.CreateVector(std::vector<flatbuffers::Offset<fb::Value>>{value, value});
  auto ins = instructions(b);
  auto inputs = b.CreateVector(std::vector<int32_t>{0});
  auto outputs = b.CreateVector(std::vector<int32_t>{0});
  auto method_name = b.CreateString("m");
  auto method = fb::CreateMethod(b, method_name, values, inputs, outputs, b.CreateVector(ins));
  fb::FinishProgramBuffer(b, fb::CreateProgram(b, 0, b.CreateVector(std::vector<flatbuffers::Offset<fb::Method>>{method})));
  return program::write_container(program::kProgramFormat, {b.GetBufferPointer(), b.GetSize()}, {});
}

// A kernel call Relu(value 0) -> value 1 with the attributes `attrs` makes.
template <typename F>
std::vector<uint8_t> with_attributes(F attrs) {
  return hand_built([&](flatbuffers::FlatBufferBuilder& b) {
    auto a = attrs(b);
    auto call = fb::CreateKernelCall(b, b.CreateString("n"), b.CreateString("Relu"), b.CreateString(""), 17,
                                     b.CreateVector(std::vector<int32_t>{0}), b.CreateVector(std::vector<int32_t>{1}),
                                     b.CreateVector(a));
    return std::vector<flatbuffers::Offset<fb::Instruction>>{fb::CreateInstruction(b, call)};
  });
}

// ---- the container ---------------------------------------------------------------------------

TEST(ProgramCorrupt, ValidSampleLoads) {
  auto b = valid_bytes();
  auto r = program::read_program_bytes(b.data(), b.size(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->data.methods[0].values.size(), 7u);
}

TEST(ProgramCorrupt, BadMagicAndTruncation) {
  auto b = valid_bytes();
  b[2] = 'X';
  expect_rejected(b, "not a streamrt program (bad magic)");
  expect_rejected({}, "bad magic");
  expect_rejected({'S', 'R', 'T'}, "bad magic");
  EXPECT_EQ(program::read_program_bytes(nullptr, 0, nullptr).status().code(), StatusCode::kInvalidProgram);
  auto t = valid_bytes();
  t.resize(10);
  expect_rejected(t, "truncated header (10 of 64 bytes)");
  t = valid_bytes();
  t.resize(40);
  expect_rejected(t, "truncated header (40 of 64 bytes)");
}

TEST(ProgramCorrupt, OtherFormatVersionIsIncompatible) {
  auto b = valid_bytes();
  auto h = program_header(b);
  h.format_version = 2;
  put_program_header(b, h);
  expect_rejected(b, "program format version 2, this build reads version 1", StatusCode::kIncompatible);
  b.resize(12);
  expect_rejected(b, "version 2", StatusCode::kIncompatible);
}

TEST(ProgramCorrupt, HeaderFieldsOutOfRange) {
  struct Case {
    const char* needle;
    void (*mutate)(ContainerHeader&);
  };
  const Case cases[] = {
      {"header_size is 128, expected 64", [](ContainerHeader& h) { h.header_size = 128; }},
      {"reserved header field is 1", [](ContainerHeader& h) { h.reserved = 1; }},
      {"FlatBuffer offset is 72, expected 64", [](ContainerHeader& h) { h.flatbuffer_offset = 72; }},
      {"FlatBuffer size 0 is out of range", [](ContainerHeader& h) { h.flatbuffer_size = 0; }},
      {"FlatBuffer size 18446744073709551615 is out of range", [](ContainerHeader& h) { h.flatbuffer_size = UINT64_MAX; }},
      {"segments section offset 4097 is not 4096-byte aligned", [](ContainerHeader& h) { h.section_offset = 4097; }},
      {"overlaps the FlatBuffer", [](ContainerHeader& h) { h.section_offset = 0; }},
      {"segments section (offset 18446744073709547520", [](ContainerHeader& h) { h.section_offset = UINT64_MAX & ~uint64_t{4095}; }},
      {"size 18446744073709551615) extends past the end", [](ContainerHeader& h) { h.section_size = UINT64_MAX; }},
      {"extends past the end", [](ContainerHeader& h) { h.section_size += 1; }},
      {"1 trailing bytes", [](ContainerHeader& h) { h.section_size -= 1; }},
      {"segments section offset 4096 but size 0", [](ContainerHeader& h) { h.section_size = 0; }},
      {"FlatBuffer checksum mismatch", [](ContainerHeader& h) { h.flatbuffer_checksum ^= 1; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    auto b = valid_bytes();
    auto h = program_header(b);
    ASSERT_EQ(h.section_offset, 4096u);  // the expected messages assume it
    c.mutate(h);
    put_program_header(b, h);
    expect_rejected(b, c.needle);
  }
}

TEST(ProgramCorrupt, PaddingIdentifierAndVerifier) {
  auto b = valid_bytes();
  auto h = program_header(b);
  const uint64_t pad = h.flatbuffer_offset + h.flatbuffer_size + 5;
  b[pad] = 1;
  expect_rejected(b, "non-zero padding byte at offset " + std::to_string(pad));
  b = valid_bytes();
  b[h.flatbuffer_offset + 4] = 'Q';  // the identifier "SRTX"
  reseal_program(b);
  expect_rejected(b, "does not carry the identifier 'SRTX'");
  // Garbage after a correct identifier: the verifier.
  std::vector<uint8_t> garbage(120);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 37 + 11);
  std::memcpy(garbage.data() + 4, "SRTX", 4);
  expect_rejected(program::write_container(program::kProgramFormat, garbage, {}), "fails the FlatBuffers verifier");
  // Flipped bytes inside the FlatBuffer, resealed: never a crash, always a message.
  for (uint64_t i = h.flatbuffer_offset + 8; i < h.flatbuffer_offset + h.flatbuffer_size; i += 3) {
    auto c = valid_bytes();
    c[i] ^= 0x5a;
    reseal_program(c);
    Status st = read_status(c);
    if (!st.ok()) {
      EXPECT_FALSE(st.message().empty());
    }
  }
}

// ---- segments ----------------------------------------------------------------------------------

TEST(ProgramCorrupt, SegmentsOutOfBoundsOrDamaged) {
  expect_rejected(assembled([](ProgramData& p, auto&) { p.segments[0].offset = 8; }),
                  "segment 0 offset 8 is not 64-byte aligned");
  expect_rejected(assembled([](ProgramData& p, auto&) { p.segments[1].size = 1 << 20; }),
                  "segment 1 extends past the segments section");
  expect_rejected(assembled([](ProgramData& p, auto&) { p.segments[1].offset = UINT64_MAX & ~uint64_t{63}; }),
                  "segment 1 extends past the segments section");
  expect_rejected(assembled([](ProgramData& p, auto&) { p.segments[1].offset = 0; }), "overlaps another segment");
  expect_rejected(assembled([](ProgramData&, auto& section) { section[2] ^= 1; }), "segment 0 checksum mismatch");
  expect_rejected(assembled([](ProgramData&, auto& section) { section[30] = 9; }),
                  "non-zero byte between segments at section offset 30");
  expect_rejected(assembled([](ProgramData&, auto& section) { section.push_back(1); }),
                  "non-zero byte after the last segment");
}

// ---- methods, values, instructions, delegates ----------------------------------------------

TEST(ProgramCorrupt, Methods) {
  expect_rejected(mutated([](ProgramData& p) { p.methods.clear(); }), "the program has no methods");
  expect_rejected(mutated([](ProgramData& p) { p.methods.push_back(p.methods[0]); }), "'forward' appears twice");
  expect_rejected(mutated([](ProgramData& p) { p.methods[0].name.clear(); }), "method 0 '' has an empty name");
}

TEST(ProgramCorrupt, Values) {
  using V = program::ValueData;
  auto value = [](auto edit) { return mutated([&](ProgramData& p) { edit(p.methods[0].values); }); };
  expect_rejected(value([](std::vector<V>& v) { v[2].dtype = static_cast<DataType>(99); }), "value 2 's' has invalid dtype 99");
  expect_rejected(value([](std::vector<V>& v) { v[2].dtype = DataType::kUndefined; }), "has invalid dtype 0");
  expect_rejected(value([](std::vector<V>& v) { v[2].dims = {2, -2}; }), "value 2 's' has invalid dims [2, -2]");
  expect_rejected(value([](std::vector<V>& v) { v[2].dims = {int64_t{1} << 40, int64_t{1} << 40}; }),
                  "hold too many elements");
  expect_rejected(value([](std::vector<V>& v) { v[1].constant_segment = 7; }), "value 1 'c' names segment 7 (the program has 2)");
  expect_rejected(value([](std::vector<V>& v) { v[1].dims = {-1, 3}; }), "value 1 'c' is a constant with dynamic dims");
  expect_rejected(value([](std::vector<V>& v) { v[1].dims = {3, 3}; }), "needs 36 bytes, its segment holds 24");
  expect_rejected(value([](std::vector<V>& v) { v[6].tensor_list = {0}; }),
                  "value 6 'consts' lists value 0 'x', which is not a constant tensor");
  expect_rejected(value([](std::vector<V>& v) { v[6].tensor_list = {40}; }), "names value 40 (the method has 7 values)");
  expect_rejected(value([](std::vector<V>& v) { v[4].constant_segment = 0; }), "value 4 'seven' is a int but names a segment");
}

TEST(ProgramCorrupt, InputsAndOutputs) {
  auto method = [](auto edit) { return mutated([&](ProgramData& p) { edit(p.methods[0]); }); };
  expect_rejected(method([](program::MethodData& m) { m.inputs = {9}; }), "input names value 9 (the method has 7 values)");
  expect_rejected(method([](program::MethodData& m) { m.inputs = {1}; }), "input 1 'c' is a constant");
  expect_rejected(method([](program::MethodData& m) { m.inputs = {0, 0}; }), "lists input 0 'x' twice");
  expect_rejected(method([](program::MethodData& m) {
                    m.values.push_back({});
                    m.inputs.push_back(7);
                  }),
                  "input 7 '' has no kind");
  expect_rejected(method([](program::MethodData& m) { m.outputs = {-3}; }), "output names value -3");
  expect_rejected(method([](program::MethodData& m) { m.instructions.pop_back(); }), "output 3 'y' is never written");
}

TEST(ProgramCorrupt, Instructions) {
  auto method = [](auto edit) { return mutated([&](ProgramData& p) { edit(p.methods[0]); }); };
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.op_type.clear(); }),
                  "instruction 0 is a kernel call without an op type");
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.inputs[1] = 4; }),
                  "instruction 0 (Add) reads value 4 'seven', which is not a tensor");
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.inputs[1] = 1000; }),
                  "instruction 0 (Add) input names value 1000");
  expect_rejected(method([](program::MethodData& m) { std::swap(m.instructions[0], m.instructions[1]); }),
                  "instruction 0 reads value 2 's' before any instruction writes it");
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.outputs = {1}; }),
                  "writes value 1 'c', which is already written");
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.outputs = {0}; }),
                  "writes value 0 'x', which is already written");
  expect_rejected(method([](program::MethodData& m) { m.instructions[1].delegate.outputs = {2}; }),
                  "instruction 1 writes value 2 's', which is already written");
  expect_rejected(method([](program::MethodData& m) { m.instructions[0].kernel.outputs = {4}; }),
                  "writes value 4 'seven', which is not a tensor");
  expect_rejected(method([](program::MethodData& m) { m.instructions[1].delegate.delegate = 3; }),
                  "instruction 1 calls delegate 3 (the method has 1)");
  expect_rejected(method([](program::MethodData& m) { m.instructions[1].delegate.inputs = {-1}; }),
                  "instruction 1 input names value -1");
  expect_rejected(method([](program::MethodData& m) {
                    m.instructions[0].kernel.attrs["t"] = ir::Attribute::make_tensor(Tensor());
                  }),
                  "instruction 0 attribute 't' has kind tensor but holds no tensor");
}

TEST(ProgramCorrupt, InstructionsBuiltByHand) {
  auto neither = hand_built([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector<flatbuffers::Offset<fb::Instruction>>{fb::CreateInstruction(b)};
  });
  expect_rejected(neither, "instruction 0 must be exactly one of a kernel call and a delegate call");
  auto both = hand_built([](flatbuffers::FlatBufferBuilder& b) {
    auto k = fb::CreateKernelCall(b, 0, b.CreateString("Relu"));
    auto d = fb::CreateDelegateCall(b, 0);
    return std::vector<flatbuffers::Offset<fb::Instruction>>{fb::CreateInstruction(b, k, d)};
  });
  expect_rejected(both, "must be exactly one of");
  expect_rejected(with_attributes([](flatbuffers::FlatBufferBuilder& b) {
                    return std::vector<flatbuffers::Offset<fb::Attribute>>{
                        fb::CreateAttribute(b, b.CreateString("k"), static_cast<fb::AttributeKind>(77))};
                  }),
                  "attribute 'k' has invalid kind 77");
  expect_rejected(with_attributes([](flatbuffers::FlatBufferBuilder& b) {
                    auto one = fb::CreateAttribute(b, b.CreateString("k"), fb::AttributeKind::Int, 1);
                    auto two = fb::CreateAttribute(b, b.CreateString("k"), fb::AttributeKind::Int, 2);
                    return std::vector<flatbuffers::Offset<fb::Attribute>>{one, two};
                  }),
                  "attribute 'k' appears twice");
  expect_rejected(with_attributes([](flatbuffers::FlatBufferBuilder& b) {
                    auto t = fb::CreateTensorData(b, fb::DType::Float32, b.CreateVector(std::vector<int64_t>{4}),
                                                  b.CreateVector(std::vector<uint8_t>(5)));
                    return std::vector<flatbuffers::Offset<fb::Attribute>>{
                        fb::CreateAttribute(b, b.CreateString("t"), fb::AttributeKind::Tensor, 0, 0, 0, 0, 0, 0, t)};
                  }),
                  "tensor of 4 float32 needs 16 bytes, holds 5");
  expect_rejected(with_attributes([](flatbuffers::FlatBufferBuilder& b) {
                    auto t = fb::CreateTensorData(b, static_cast<fb::DType>(50));
                    return std::vector<flatbuffers::Offset<fb::Attribute>>{
                        fb::CreateAttribute(b, b.CreateString("t"), fb::AttributeKind::Tensor, 0, 0, 0, 0, 0, 0, t)};
                  }),
                  "has invalid dtype 50");
  expect_rejected(with_attributes([](flatbuffers::FlatBufferBuilder& b) {
                    return std::vector<flatbuffers::Offset<fb::Attribute>>{
                        fb::CreateAttribute(b, b.CreateString("t"), fb::AttributeKind::Tensor)};
                  }),
                  "has kind tensor but holds no tensor");
}

TEST(ProgramCorrupt, ValueTagOutOfRange) {
  flatbuffers::FlatBufferBuilder b;
  fb::ValueBuilder vb(b);
  vb.add_tag(static_cast<fb::ValueTag>(42));
  auto v = vb.Finish();
  auto method = fb::CreateMethod(b, b.CreateString("m"), b.CreateVector(std::vector<flatbuffers::Offset<fb::Value>>{v}));
  fb::FinishProgramBuffer(b, fb::CreateProgram(b, 0, b.CreateVector(std::vector<flatbuffers::Offset<fb::Method>>{method})));
  expect_rejected(program::write_container(program::kProgramFormat, {b.GetBufferPointer(), b.GetSize()}, {}),
                  "method 0 'm' value 0 has invalid tag 42");
}

TEST(ProgramCorrupt, Delegates) {
  auto delegate = [](auto edit) { return mutated([&](ProgramData& p) { edit(p.methods[0].delegates[0]); }); };
  expect_rejected(delegate([](program::DelegateData& d) { d.backend.clear(); }), "delegate 0 has an empty backend name");
  expect_rejected(delegate([](program::DelegateData& d) { d.segment = 2; }),
                  "delegate 0 ('StubBackend') names segment 2 (the program has 2)");
  expect_rejected(delegate([](program::DelegateData& d) { d.segment = -1; }), "names segment -1");
  expect_rejected(delegate([](program::DelegateData& d) { d.compile_specs.push_back({"", {}}); }),
                  "has a compile spec with an empty key");
  expect_rejected(delegate([](program::DelegateData& d) { d.compile_specs.push_back(d.compile_specs[0]); }),
                  "has compile spec 'mode' twice");
}

TEST(ProgramCorrupt, MissingFileIsIoError) {
  auto r = program::read_program("/nonexistent/dir/model.pte");
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace streamrt
