// The corrupt-plan set: every malformed plan is rejected with kInvalidPlan (or kIncompatible)
// and a message naming the problem; none crashes or reads out of bounds (run under ASan).
// Semantic cases are built by mutating PlanData before serializing, or by assembling a file
// around hand-made metadata, so the checksums are valid and the later stages are reached.
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "plan/plan_generated.h"
#include "plan_test_util.h"

namespace streamrt {
namespace {

namespace fb = plan::fb;
using plan::PlanData;
using plan::ValueEntry;
using testing::header_of;
using testing::put_header;
using testing::reseal;
using testing::sample_plan;

Status read_status(const std::vector<uint8_t>& bytes) {
  auto r = plan::read_plan_bytes(bytes.data(), bytes.size(), nullptr);
  return r.ok() ? ok_status() : r.status();
}

// Expects a rejection with `code` whose message contains `needle`.
void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& needle,
                     StatusCode code = StatusCode::kInvalidPlan) {
  Status st = read_status(bytes);
  ASSERT_FALSE(st.ok()) << "accepted a plan that should fail with: " << needle;
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
  EXPECT_EQ(st.message().rfind("plan: ", 0), 0u) << st.to_string();
}

std::vector<uint8_t> valid_bytes() {
  PlanData p = sample_plan();
  return plan::serialize_plan(p).value();
}

// Serializes sample_plan() after `mutate` (the writer recomputes the weight layout).
template <typename F>
std::vector<uint8_t> mutated(F mutate) {
  PlanData p = sample_plan();
  mutate(p);
  auto r = plan::serialize_plan(p);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : std::vector<uint8_t>{};
}

// Assembles sample_plan() after `mutate` around the sample's weights section, keeping the
// mutated weight offsets/sizes as they are.
template <typename F>
std::vector<uint8_t> assembled(F mutate) {
  PlanData p = sample_plan();
  auto bytes = plan::serialize_plan(p).value();
  plan::PlanHeader h = header_of(bytes);
  std::vector<uint8_t> section(bytes.begin() + static_cast<std::ptrdiff_t>(h.weights_offset), bytes.end());
  mutate(p);
  return plan::assemble_plan(p, section).value();
}

// ---- header ----------------------------------------------------------------------------

TEST(PlanCorrupt, BadMagic) {
  auto b = valid_bytes();
  b[0] = 'X';
  expect_rejected(b, "not a streamrt plan");
  expect_rejected({}, "not a streamrt plan");
  expect_rejected({'S', 'R', 'T'}, "not a streamrt plan");
  Status st = plan::read_plan_bytes(nullptr, 0, nullptr).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidPlan);
}

TEST(PlanCorrupt, OtherFormatVersionIsIncompatible) {
  auto b = valid_bytes();
  plan::PlanHeader h = header_of(b);
  h.format_version = 2;
  put_header(b, h);
  expect_rejected(b, "plan format version 2, this build reads version 1", StatusCode::kIncompatible);
  // Even when the rest of the header would not parse.
  b.resize(12);
  expect_rejected(b, "version 2", StatusCode::kIncompatible);
}

TEST(PlanCorrupt, HeaderFieldsOutOfRange) {
  struct Case {
    const char* needle;
    void (*mutate)(plan::PlanHeader&);
  };
  const Case cases[] = {
      {"header_size is 128, expected 64", [](plan::PlanHeader& h) { h.header_size = 128; }},
      {"metadata_offset is 72, expected 64", [](plan::PlanHeader& h) { h.metadata_offset = 72; }},
      {"metadata_offset is 0", [](plan::PlanHeader& h) { h.metadata_offset = 0; }},
      {"metadata_size is 0", [](plan::PlanHeader& h) { h.metadata_size = 0; }},
      {"metadata section (offset 64 + size 18446744073709551615) extends past the end",
       [](plan::PlanHeader& h) { h.metadata_size = UINT64_MAX; }},
      {"weights_offset 4097 is not 4096-byte aligned",
       [](plan::PlanHeader& h) { h.weights_offset = 4097; }},
      {"overlaps the metadata", [](plan::PlanHeader& h) { h.weights_offset = 0; }},
      {"weights section (offset 18446744073709547520",
       [](plan::PlanHeader& h) { h.weights_offset = UINT64_MAX & ~uint64_t{4095}; }},
      {"weights section (offset 4096 + size 18446744073709551615) extends past the end of the file",
       [](plan::PlanHeader& h) { h.weights_size = UINT64_MAX; }},
      {"extends past the end of the file", [](plan::PlanHeader& h) { h.weights_size += 1; }},
      {"1 trailing bytes", [](plan::PlanHeader& h) { h.weights_size -= 1; }},
      {"weights_offset 4096 but weights_size 0", [](plan::PlanHeader& h) { h.weights_size = 0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    auto b = valid_bytes();
    plan::PlanHeader h = header_of(b);
    ASSERT_EQ(h.weights_offset, 4096u);  // the expected messages assume it
    c.mutate(h);
    put_header(b, h);
    reseal(b);
    expect_rejected(b, c.needle);
  }
}

TEST(PlanCorrupt, StrippedHeaderWithChecksumOrTrailingBytes) {
  PlanData p = sample_plan();
  p.weights_stripped = true;
  auto b = plan::serialize_plan(p).value();
  auto h = header_of(b);
  h.weights_checksum = 1;
  auto c = b;
  put_header(c, h);
  expect_rejected(c, "weights_checksum 0x0000000000000001 but weights_size 0");
  b.push_back(0);
  expect_rejected(b, "1 trailing bytes after the last section");
}

TEST(PlanCorrupt, NonZeroPadding) {
  auto b = valid_bytes();
  auto h = header_of(b);
  b[h.metadata_offset + h.metadata_size + 3] = 0x20;
  expect_rejected(b, "non-zero padding byte at offset " + std::to_string(h.metadata_offset + h.metadata_size + 3));
}

// ---- truncation and bit flips -----------------------------------------------------------

// Cuts the plan at every length and checks that the error names the section that was cut.
void check_every_truncation(const std::vector<uint8_t>& full) {
  auto h = header_of(full);
  const uint64_t meta_end = h.metadata_offset + h.metadata_size;
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(full.size()));
    std::vector<uint8_t> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    const char* needle = n < 8                        ? "not a streamrt plan"
                         : n < sizeof(plan::PlanHeader) ? "truncated header"
                         : n < meta_end                 ? "metadata section"
                                                        : "weights section";
    expect_rejected(b, needle);
    if (::testing::Test::HasFailure()) return;  // one report is enough
  }
}

TEST(PlanCorrupt, TruncatedAtEveryLength) {
  check_every_truncation(valid_bytes());
}

TEST(PlanCorrupt, StrippedPlanTruncatedAtEveryLength) {
  PlanData p = sample_plan();
  p.weights_stripped = true;
  auto full = plan::serialize_plan(p).value();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    Status st = read_status(b);
    ASSERT_EQ(st.code(), StatusCode::kInvalidPlan) << n << ": " << st.to_string();
  }
}

TEST(PlanCorrupt, EveryBitFlipIsDetected) {
  const auto full = valid_bytes();
  auto h = header_of(full);
  const uint64_t meta_end = h.metadata_offset + h.metadata_size;
  auto b = full;
  for (size_t i = 0; i < full.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      b[i] ^= static_cast<uint8_t>(1u << bit);
      Status st = read_status(b);
      b[i] = full[i];
      ASSERT_FALSE(st.ok()) << "flip of byte " << i << " bit " << bit << " was not detected";
      ASSERT_FALSE(st.message().empty());
      if (i < sizeof(plan::PlanHeader)) {
        ASSERT_TRUE(st.code() == StatusCode::kInvalidPlan || st.code() == StatusCode::kIncompatible)
            << st.to_string();
        continue;
      }
      ASSERT_EQ(st.code(), StatusCode::kInvalidPlan) << st.to_string();
      const char* needle = i < meta_end              ? "metadata checksum mismatch"
                           : i < h.weights_offset    ? "non-zero padding"
                                                     : "weights checksum mismatch";
      ASSERT_NE(st.message().find(needle), std::string::npos) << i << ": " << st.to_string();
    }
  }
}

// ---- metadata that passes the checksum but not the verifier / decoder -------------------

TEST(PlanCorrupt, GarbageMetadataFailsTheVerifier) {
  std::vector<uint8_t> meta(256);
  for (size_t i = 0; i < meta.size(); ++i) meta[i] = static_cast<uint8_t>(i * 37 + 11);
  std::memcpy(meta.data() + 4, "SRTP", 4);
  expect_rejected(testing::wrap_metadata(meta.data(), meta.size()), "fails the FlatBuffers verifier");
  // Root offset pointing past the end.
  uint32_t root = 0xfffffff0;
  std::memcpy(meta.data(), &root, 4);
  expect_rejected(testing::wrap_metadata(meta.data(), meta.size()), "fails the FlatBuffers verifier");
  std::memcpy(meta.data() + 4, "ABCD", 4);
  expect_rejected(testing::wrap_metadata(meta.data(), meta.size()), "identifier 'SRTP'");
  std::vector<uint8_t> tiny = {1, 2, 3};
  expect_rejected(testing::wrap_metadata(tiny.data(), tiny.size()), "metadata");
}

// Builds metadata by hand: a Plan with one step whose attributes are given.
template <typename F>
std::vector<uint8_t> plan_with_attributes(F make_attrs, fb::DeviceKind device = fb::DeviceKind::Cpu,
                                          const char* identifier = "SRTP") {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Attribute>> attrs = make_attrs(b);
  std::vector<int32_t> none;
  auto node = fb::CreateNodeDirect(b, "n", "Op", "", 1, &none, &none, &attrs);
  std::vector<flatbuffers::Offset<fb::Node>> steps = {node};
  auto dev = fb::CreateDeviceDirect(b, device, 0, 0, "cpu");
  auto root = fb::CreatePlanDirect(b, "hand", "0", dev, nullptr, nullptr, nullptr, &steps);
  b.Finish(root, identifier);
  return testing::wrap_metadata(b.GetBufferPointer(), b.GetSize());
}

flatbuffers::Offset<fb::Attribute> tensor_attr(flatbuffers::FlatBufferBuilder& b, const char* name,
                                               fb::DType dtype, std::vector<int64_t> dims,
                                               size_t nbytes) {
  std::vector<uint8_t> data(nbytes, 1);
  auto t = fb::CreateTensorDataDirect(b, dtype, &dims, &data);
  return fb::CreateAttributeDirect(b, name, fb::AttributeKind::Tensor, 0, 0, nullptr, nullptr,
                                   nullptr, nullptr, t);
}

TEST(PlanCorrupt, HandMadeMetadataBaselineIsValid) {
  auto ok = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{tensor_attr(b, "t", fb::DType::Float32, {2}, 8)};
  });
  Status st = read_status(ok);
  EXPECT_TRUE(st.ok()) << st.to_string();
}

TEST(PlanCorrupt, TensorAttributeClaimingHugeDimsInTinyFile) {
  auto b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{tensor_attr(b, "t", fb::DType::Float32, {int64_t{1} << 40}, 8)};
  });
  expect_rejected(b, "attribute 't': tensor of 1099511627776 float32 needs 4398046511104 bytes, holds 8");
  b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{tensor_attr(b, "t", fb::DType::Int8, {int64_t{1} << 40, int64_t{1} << 40}, 8)};
  });
  expect_rejected(b, "are not static or overflow");
  b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{tensor_attr(b, "t", fb::DType::Int8, {-1, 2}, 2)};
  });
  expect_rejected(b, "are not static or overflow");
  b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{tensor_attr(b, "t", static_cast<fb::DType>(77), {2}, 2)};
  });
  expect_rejected(b, "attribute 't' has invalid dtype 77");
}

TEST(PlanCorrupt, BadAttributesInMetadata) {
  auto b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{fb::CreateAttributeDirect(b, "k", static_cast<fb::AttributeKind>(42))};
  });
  expect_rejected(b, "step 0 'n' attribute 'k' has invalid kind 42");
  b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{fb::CreateAttributeDirect(b, "a", fb::AttributeKind::Int, 1),
                       fb::CreateAttributeDirect(b, "a", fb::AttributeKind::Int, 2)};
  });
  expect_rejected(b, "attribute 'a' appears twice");
  b = plan_with_attributes([](flatbuffers::FlatBufferBuilder& b) {
    return std::vector{fb::CreateAttributeDirect(b, "t", fb::AttributeKind::Tensor)};
  });
  expect_rejected(b, "attribute 't' has kind tensor but holds no tensor");
}

TEST(PlanCorrupt, UnknownDeviceKindOrIdentifier) {
  auto none = [](flatbuffers::FlatBufferBuilder&) {
    return std::vector<flatbuffers::Offset<fb::Attribute>>{};
  };
  expect_rejected(plan_with_attributes(none, static_cast<fb::DeviceKind>(7)), "device kind 7 is unknown");
  expect_rejected(plan_with_attributes(none, fb::DeviceKind::Cpu, "XXXX"), "identifier 'SRTP'");
}

// ---- semantic checks (valid checksums, valid FlatBuffer) ------------------------------

TEST(PlanCorrupt, StepIndicesOutOfRange) {
  expect_rejected(mutated([](PlanData& p) { p.steps[1].inputs[0] = 99; }),
                  "step 1 'add' (FusedAdd) input 0 is value index 99, out of range (7 values)");
  expect_rejected(mutated([](PlanData& p) { p.steps[0].inputs[1] = -2; }),
                  "step 0 'mm' (MatMul) input 1 is value index -2");
  expect_rejected(mutated([](PlanData& p) { p.steps[0].outputs[0] = 7; }),
                  "output 0 is value index 7, out of range");
  expect_rejected(mutated([](PlanData& p) { p.steps[0].inputs.push_back(INT32_MIN); }),
                  "value index -2147483648");
}

TEST(PlanCorrupt, StepOutputsMustBeFreshActivationsOrOutputs) {
  expect_rejected(mutated([](PlanData& p) { p.steps[0].outputs[0] = 1; }),
                  "writes value 'w', which is not an activation or output");
  expect_rejected(mutated([](PlanData& p) { p.steps[0].outputs[0] = 0; }),
                  "writes value 'x', which is not an activation or output");
  expect_rejected(mutated([](PlanData& p) { p.steps[1].outputs[0] = 3; }),
                  "writes value 'h', already produced by step 0");
}

TEST(PlanCorrupt, ValueDtypesDimsAndKinds) {
  expect_rejected(mutated([](PlanData& p) { p.values[3].dtype = static_cast<DataType>(42); }),
                  "value 3 'h' has invalid dtype 42");
  expect_rejected(mutated([](PlanData& p) { p.values[3].dtype = DataType::kUndefined; }),
                  "value 3 'h' has invalid dtype 0");
  expect_rejected(mutated([](PlanData& p) { p.values[3].dims = {-2, 3}; }),
                  "value 3 'h' has invalid dims [-2, 3]");
  expect_rejected(mutated([](PlanData& p) { p.values[3].max_dims = {8, INT64_MIN}; }),
                  "has invalid max_dims");
  expect_rejected(mutated([](PlanData& p) {
                    p.values[5].dims = {int64_t{1} << 40, int64_t{1} << 40};
                    p.values[5].max_dims = {};
                  }),
                  "value 5 'y' dims [1099511627776, 1099511627776] hold too many elements");
  expect_rejected(mutated([](PlanData& p) { p.values[3].max_dims = {8, 3, 1}; }),
                  "of another rank than dims");
  expect_rejected(mutated([](PlanData& p) { p.values[3].kind = static_cast<ValueEntry::Kind>(9); }),
                  "value 3 'h' has invalid kind 9");
}

TEST(PlanCorrupt, ActivationsOutsideTheArena) {
  expect_rejected(mutated([](PlanData& p) { p.values[3].arena_offset = 200; }),
                  "value 3 'h' lies outside the arena (offset 200 + size 96 > arena_size 256)");
  expect_rejected(mutated([](PlanData& p) { p.values[4].arena_offset = UINT64_MAX - 8; }),
                  "value 4 'idx' lies outside the arena");
  expect_rejected(mutated([](PlanData& p) { p.values[4].arena_size = UINT64_MAX; }),
                  "value 4 'idx' lies outside the arena");
  expect_rejected(mutated([](PlanData& p) { p.arena_size = 100; }), "'idx' lies outside the arena");
  expect_rejected(mutated([](PlanData& p) { p.values[3].arena_size = 95; }),
                  "value 3 'h' reserves 95 arena bytes but 8x3 float32 needs 96");
}

TEST(PlanCorrupt, WeightValuesMustMatchTheirWeight) {
  expect_rejected(mutated([](PlanData& p) { p.values[1].weight_index = 3; }),
                  "value 1 'w' has weight_index 3, out of range (3 weights)");
  expect_rejected(mutated([](PlanData& p) { p.values[1].weight_index = -1; }),
                  "has weight_index -1");
  expect_rejected(mutated([](PlanData& p) { p.values[1].weight_index = 1; }),
                  "value 1 'w' is float32 [4, 3] but its weight 'b' is float16 [3]");
}

TEST(PlanCorrupt, IoTensors) {
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].value = 7; }),
                  "input 0 'x' has value index 7, out of range (7 values)");
  expect_rejected(mutated([](PlanData& p) { p.outputs[0].value = -1; }),
                  "output 0 'y' has value index -1");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].dtype = DataType::kFloat16; }),
                  "input 0 'x' is float16 but its value 'x' is float32");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].dtype = static_cast<DataType>(200); }),
                  "input 0 'x' has invalid dtype 200");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].dims = {-1, -7}; }), "has invalid dims [-1, -7]");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].min = {9, 4}; }),
                  "profile dim 0 is not min <= opt <= max (9, 4, 8)");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].max = {8}; }),
                  "profile max [8] has another rank");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].opt = {-1, 4}; }),
                  "profile opt [-1, 4] is not static");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].min = {1, 5}; }),
                  "profile min [1, 5] disagrees with static dims [-1, 4]");
  // plan_external_fuzz: min without max passed, and set_input_shape read max[i] of an empty max.
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].max.clear(); }), "max []): give all three or none");
  expect_rejected(mutated([](PlanData& p) { p.inputs[0].opt.clear(); }), "has a partial optimization profile");
}

TEST(PlanCorrupt, AttributesWrittenFromBadPlanData) {
  expect_rejected(mutated([](PlanData& p) {
                    p.steps[0].attrs["k"].kind = static_cast<ir::Attribute::Kind>(9);
                  }),
                  "step 0 'mm' attribute 'k' has invalid kind 9");
  expect_rejected(mutated([](PlanData& p) { p.steps[0].attrs["t"] = ir::Attribute::make_tensor(Tensor()); }),
                  "attribute 't' has kind tensor but holds no tensor");
  static const uint8_t bytes[4] = {};
  expect_rejected(mutated([](PlanData& p) {
                    p.steps[0].attrs["t"] = ir::Attribute::make_tensor(
                        Tensor::view(static_cast<DataType>(50), {2}, bytes, nullptr));
                  }),
                  "attribute 't' has invalid dtype 50");
}

TEST(PlanCorrupt, WeightTableEntries) {
  expect_rejected(assembled([](PlanData& p) { p.weights[1].offset = 65; }),
                  "weight 1 'b' offset 65 is not 64-byte aligned");
  expect_rejected(assembled([](PlanData& p) { p.weights[0].size = 47; }),
                  "weight 0 'w' has size 47 but 4x3 float32 needs 48 bytes");
  expect_rejected(assembled([](PlanData& p) { p.weights[2].offset = 4096; }),
                  "weight 2 'e' extends past the end of the weights section (offset 4096 + 5 > 133)");
  expect_rejected(assembled([](PlanData& p) { p.weights[2].offset = UINT64_MAX - 63; }),
                  "weight 2 'e' extends past the end of the weights section");
  expect_rejected(assembled([](PlanData& p) { p.weights[2].dtype = static_cast<DataType>(99); }),
                  "weight 2 'e' has invalid dtype 99");
  expect_rejected(assembled([](PlanData& p) { p.weights[2].dims = {-1}; }),
                  "weight 2 'e' has dynamic dims [-1]");
  expect_rejected(assembled([](PlanData& p) { p.weights[2].dims = {-3}; }),
                  "weight 2 'e' has invalid dims [-3]");
  expect_rejected(assembled([](PlanData& p) {
                    p.weights[2].name = "w";
                    p.values[6].name = "w";
                  }),
                  "weight 2 'w' has a duplicate name");
}

TEST(PlanCorrupt, HugeClaimedWeightInTinyFile) {
  auto b = assembled([](PlanData& p) {
    p.weights[2].dtype = DataType::kFloat32;
    p.weights[2].dims = {int64_t{1} << 40};
    p.weights[2].size = uint64_t{4} << 40;
    p.values[6].dtype = DataType::kFloat32;
    p.values[6].dims = {int64_t{1} << 40};
  });
  expect_rejected(b, "weight 2 'e' extends past the end of the weights section (offset 128 + 4398046511104 > 133)");
  b = assembled([](PlanData& p) { p.weights[2].dims = {int64_t{1} << 40, int64_t{1} << 40}; });
  expect_rejected(b, "weight 2 'e' dims [1099511627776, 1099511627776] hold too many elements");
}

TEST(PlanCorrupt, StrippedFlagMustMatchTheWeightsSection) {
  auto b = assembled([](PlanData& p) { p.weights_stripped = true; });
  expect_rejected(b, "weights_stripped is set but the file has a weights section of 133 bytes");
  PlanData p = sample_plan();
  ASSERT_TRUE(plan::serialize_plan(p).ok());  // layout
  b = plan::assemble_plan(p, {}).value();
  expect_rejected(b, "weight 0 'w' extends past the end of the weights section (offset 0 + 48 > 0)");
}

}  // namespace
}  // namespace streamrt
