// The engine record: a round trip, and each malformed record rejected with kInvalidProgram
// (kIncompatible for another format version) and a message naming the problem.
#include <gtest/gtest.h>

#include "delegate/engine_record.h"
#include "program_test_util.h"

namespace streamrt::delegate {
namespace {

const std::vector<uint8_t> kPlan = [] {
  std::vector<uint8_t> p(300);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  return p;
}();

EngineRecord sample_record() {
  EngineRecord r;
  r.engine_name = "enc_engine0";
  r.streamrt_version = "0.1.0";
  r.device = {plan::DeviceKind::kCuda, 9, 0, "NVIDIA H100 80GB HBM3"};
  r.inputs = {"x", "mask"};
  r.outputs = {"h"};
  r.streamable_size = 123456789;
  return r;
}

void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& needle,
                     StatusCode code = StatusCode::kInvalidProgram) {
  auto r = read_engine_record(bytes);
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
  EXPECT_EQ(r.status().message().rfind("engine record: ", 0), 0u) << r.status().to_string();
}

TEST(DelegateRecord, RoundTrip) {
  auto bytes = serialize_engine_record(sample_record(), kPlan);
  auto r = read_engine_record(bytes);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const EngineRecord want = sample_record();
  EXPECT_EQ(r->meta.engine_name, want.engine_name);
  EXPECT_EQ(r->meta.streamrt_version, "0.1.0");
  EXPECT_EQ(r->meta.device.kind, plan::DeviceKind::kCuda);
  EXPECT_EQ(r->meta.device.cc_major, 9);
  EXPECT_EQ(r->meta.device.name, want.device.name);
  EXPECT_EQ(r->meta.inputs, want.inputs);
  EXPECT_EQ(r->meta.outputs, want.outputs);
  EXPECT_EQ(r->meta.streamable_size, 123456789u);
  EXPECT_EQ(std::vector<uint8_t>(r->plan.begin(), r->plan.end()), kPlan);
  EXPECT_EQ((r->plan.data() - bytes.data()) % 64, 0) << "the plan is 64-byte aligned in the record";
  EXPECT_EQ(r->plan.data() + r->plan.size(), bytes.data() + bytes.size()) << "and ends it";
  EXPECT_EQ(describe_device(r->meta.device), "cuda (NVIDIA H100 80GB HBM3, sm_90)");
  // At an odd address (a blob inside a program may sit anywhere): the same.
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
  EXPECT_TRUE(read_engine_record({shifted.data() + 1, bytes.size()}).ok());
}

TEST(DelegateRecord, ContainerDamage) {
  const auto good = serialize_engine_record(sample_record(), kPlan);
  auto b = good;
  b[3] = '?';
  expect_rejected(b, "not a streamrt engine record (bad magic)");
  b = good;
  b[8] = 2;
  expect_rejected(b, "engine record format version 2, this build reads version 1", StatusCode::kIncompatible);
  b = good;
  b.pop_back();
  expect_rejected(b, "plan (offset");
  b = good;
  b[70] ^= 4;
  expect_rejected(b, "FlatBuffer checksum mismatch");
  expect_rejected(serialize_engine_record(sample_record(), {}), "plan is empty");
  b = good;
  auto h = testing::program_header(b);
  b[h.flatbuffer_offset + h.flatbuffer_size] = 1;  // padding before the plan
  if (h.flatbuffer_offset + h.flatbuffer_size < h.section_offset)
    expect_rejected(b, "non-zero padding byte");
  std::vector<uint8_t> garbage(96, 0xab);
  std::memcpy(garbage.data() + 4, "SRTR", 4);
  expect_rejected(program::write_container(kRecordFormat, garbage, kPlan), "fails the FlatBuffers verifier");
  std::memcpy(garbage.data() + 4, "SRTX", 4);
  expect_rejected(program::write_container(kRecordFormat, garbage, kPlan), "does not carry the identifier 'SRTR'");
}

TEST(DelegateRecord, MetadataRules) {
  auto with = [](auto edit) {
    EngineRecord r = sample_record();
    edit(r);
    return serialize_engine_record(r, kPlan);
  };
  expect_rejected(with([](EngineRecord& r) { r.engine_name.clear(); }), "the engine has no name");
  expect_rejected(with([](EngineRecord& r) { r.device.kind = static_cast<plan::DeviceKind>(3); }),
                  "engine 'enc_engine0': device kind 3 is unknown");
  expect_rejected(with([](EngineRecord& r) { r.outputs.clear(); }), "engine 'enc_engine0' has no outputs");
  expect_rejected(with([](EngineRecord& r) { r.inputs.push_back(""); }), "has a binding without a name");
  expect_rejected(with([](EngineRecord& r) { r.outputs.push_back("x"); }), "names binding 'x' twice");
  // Inputs are optional (an engine of constants only).
  EXPECT_TRUE(read_engine_record(with([](EngineRecord& r) { r.inputs.clear(); })).ok());
}

}  // namespace
}  // namespace streamrt::delegate
