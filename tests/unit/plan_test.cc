// Plan format: round trips through bytes and files, layout guarantees, writer errors.
// The corrupt-plan set is in plan_corrupt_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <filesystem>
#include <fstream>

#include "plan/plan.h"
#include "plan_test_util.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using plan::PlanData;
using testing::expect_plan_eq;
using testing::header_of;
using testing::sample_plan;

// A fresh directory per test, removed afterwards.
class PlanFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "streamrt_plan_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// An aligned copy, so read_plan_bytes uses the bytes in place.
std::shared_ptr<uint8_t> aligned_copy(const std::vector<uint8_t>& v) {
  void* p = std::aligned_alloc(4096, (v.size() + 4095) / 4096 * 4096 + 4096);
  std::memcpy(p, v.data(), v.size());
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

TEST(PlanFormat, RoundTripThroughBytesKeepsEveryField) {
  PlanData p = sample_plan();
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
  EXPECT_EQ(loaded->file_size, bytes->size());
}

TEST(PlanFormat, WriterComputesAlignedWeightLayout) {
  PlanData p = sample_plan();
  p.weights[0].offset = 12345;  // recomputed by the writer
  p.weights[2].size = 1;
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  // w: 12 floats = 48 bytes at 0; b: 3 halves = 6 bytes at 64; e: 5 bytes at 128.
  EXPECT_EQ(p.weights[0].offset, 0u);
  EXPECT_EQ(p.weights[0].size, 48u);
  EXPECT_EQ(p.weights[1].offset, 64u);
  EXPECT_EQ(p.weights[1].size, 6u);
  EXPECT_EQ(p.weights[2].offset, 128u);
  EXPECT_EQ(p.weights[2].size, 5u);

  plan::PlanHeader h = header_of(*bytes);
  EXPECT_EQ(std::memcmp(h.magic, "SRTPLAN\0", 8), 0);
  EXPECT_EQ(h.format_version, plan::kPlanFormatVersion);
  EXPECT_EQ(h.header_size, 64u);
  EXPECT_EQ(h.metadata_offset, 64u);
  EXPECT_EQ(h.weights_offset % 4096, 0u);
  EXPECT_GE(h.weights_offset, h.metadata_offset + h.metadata_size);
  EXPECT_LT(h.weights_offset, h.metadata_offset + h.metadata_size + 4096);
  EXPECT_EQ(h.weights_size, 133u);
  EXPECT_EQ(bytes->size(), h.weights_offset + h.weights_size);
  // FlatBuffer identifier sits at bytes 4..7 of the metadata.
  EXPECT_EQ(std::memcmp(bytes->data() + h.metadata_offset + 4, "SRTP", 4), 0);
  // Checksums are XXH3-64 of the sections, computed independently here.
  EXPECT_EQ(h.metadata_checksum, XXH3_64bits(bytes->data() + 64, h.metadata_size));
  EXPECT_EQ(h.weights_checksum, XXH3_64bits(bytes->data() + h.weights_offset, h.weights_size));
  // Weight bytes are where the table says, padding is zero.
  const uint8_t* section = bytes->data() + h.weights_offset;
  for (size_t i = 0; i < p.weights.size(); ++i)
    EXPECT_EQ(std::memcmp(section + p.weights[i].offset, p.weight_data[i].data(), p.weights[i].size), 0);
  for (uint64_t k = 48; k < 64; ++k) EXPECT_EQ(section[k], 0) << k;
}

TEST(PlanFormat, AlignedBytesAreUsedInPlaceAndViewsAreAligned) {
  PlanData p = sample_plan();
  auto bytes = plan::serialize_plan(p).value();
  auto buf = aligned_copy(bytes);
  auto loaded = plan::read_plan_bytes(buf.get(), bytes.size(), buf);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const uint8_t* base = buf.get() + header_of(bytes).weights_offset;
  for (size_t i = 0; i < p.weights.size(); ++i) {
    const Tensor& t = loaded->data.weight_data[i];
    EXPECT_EQ(t.data(), base + p.weights[i].offset) << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
    EXPECT_FALSE(t.writable());
  }
  // Unaligned input is copied into an aligned buffer first; views stay aligned and valid
  // after the caller's bytes are gone.
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto copied = plan::read_plan_bytes(shifted.data() + 1, bytes.size(), nullptr);
  ASSERT_TRUE(copied.ok()) << copied.status().to_string();
  shifted.assign(shifted.size(), 0xff);
  for (const Tensor& t : copied->data.weight_data)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  expect_plan_eq(p, copied->data);
}

TEST(PlanFormat, StrippedPlanKeepsWeightTableWithoutSection) {
  PlanData p = sample_plan();
  p.weights_stripped = true;
  p.weight_data.clear();
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  plan::PlanHeader h = header_of(*bytes);
  EXPECT_EQ(h.weights_offset, 0u);
  EXPECT_EQ(h.weights_size, 0u);
  EXPECT_EQ(h.weights_checksum, 0u);
  EXPECT_EQ(bytes->size(), 64 + h.metadata_size);
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_TRUE(loaded->data.weights_stripped);
  EXPECT_TRUE(loaded->data.weight_data.empty());
  // Offsets and sizes still describe the layout a refit will fill.
  EXPECT_EQ(loaded->data.weights[2].offset, 128u);
  EXPECT_EQ(loaded->data.weights[2].size, 5u);
  expect_plan_eq(p, loaded->data);
}

TEST(PlanFormat, StrippedPlanIgnoresWeightData) {
  PlanData with = sample_plan();
  PlanData without = sample_plan();
  with.weights_stripped = without.weights_stripped = true;
  without.weight_data.clear();
  EXPECT_EQ(plan::serialize_plan(with).value(), plan::serialize_plan(without).value());
}

TEST(PlanFormat, PlanWithoutWeights) {
  PlanData p;
  p.name = "identity";
  p.values.push_back({"x", DataType::kInt32, {2}, {2}, plan::ValueEntry::Kind::kInput, 0, 0, -1});
  p.values.push_back({"y", DataType::kInt32, {2}, {2}, plan::ValueEntry::Kind::kOutput, 0, 0, -1});
  p.inputs.push_back({"x", 0, DataType::kInt32, {2}, {}, {}, {}});
  p.outputs.push_back({"y", 1, DataType::kInt32, {2}, {}, {}, {}});
  ir::Node n;
  n.op_type = "Identity";
  n.inputs = {0};
  n.outputs = {1};
  p.steps.push_back(n);
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(header_of(*bytes).weights_size, 0u);
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
}

TEST(PlanFormat, NamesWithEmbeddedNulBytesRoundTrip) {
  PlanData p = sample_plan();
  const std::string nul_a("w\0a", 3), nul_b("w\0b", 3);
  p.name = std::string("tiny\0plan", 9);
  p.weights[0].name = nul_a;
  p.weights[1].name = nul_b;  // distinct only after the NUL
  p.values[0].name = std::string("\0x", 2);
  p.inputs[0].name = std::string("\0x", 2);
  p.device.name = std::string("dev\0", 4);
  p.steps[1].op_type = std::string("Op\0", 3);
  p.steps[1].attrs[std::string("k\0", 2)] = ir::Attribute::make_string(std::string("x\0y", 3));
  p.steps[1].attrs["strings"].strings = {std::string("\0", 1), "a"};
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
}

TEST(PlanFormat, EmptyPlanRoundTrips) {
  PlanData p;
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok());
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
}

TEST(PlanFormat, ZeroSizedWeightsNeedNoSection) {
  PlanData p;
  p.weights.push_back({"z", DataType::kFloat32, {0, 3}, 0, 0, false});
  p.weight_data.push_back(Tensor::allocate(DataType::kFloat32, {0, 3}).value());
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(header_of(*bytes).weights_size, 0u);
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  ASSERT_EQ(loaded->data.weight_data.size(), 1u);
  EXPECT_EQ(loaded->data.weight_data[0].dims(), (Dims{0, 3}));
}

TEST(PlanFormat, SerializationIsDeterministic) {
  PlanData a = sample_plan(), b = sample_plan();
  EXPECT_EQ(plan::serialize_plan(a).value(), plan::serialize_plan(b).value());
}

TEST(PlanFormat, WriterRejectsWeightDataThatDoesNotMatchTheTable) {
  PlanData p = sample_plan();
  p.weight_data.pop_back();
  auto r = plan::serialize_plan(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("3 weights but 2"), std::string::npos) << r.status().message();

  p = sample_plan();
  p.weight_data[1] = testing::plan_weight(DataType::kFloat16, {4}, 0);
  r = plan::serialize_plan(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("weight 'b'"), std::string::npos) << r.status().message();

  p = sample_plan();
  p.weights[0].dims = {-1, 3};
  r = plan::serialize_plan(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(PlanFormat, MeasuredStepTimesRoundTripAndAreOptional) {
  PlanData p = sample_plan();
  p.step_ms = {0.25f, 0.f};  // the second step was not timed (a host step)
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
  // A plan without them (every plan before the field existed) reads back with none.
  PlanData none = sample_plan();
  auto plain = plan::serialize_plan(none);
  ASSERT_TRUE(plain.ok());
  auto back = plan::read_plan_bytes(plain->data(), plain->size(), nullptr);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->data.step_ms.empty());
  EXPECT_EQ(back->data.min_run_ms, 0.f);
}

TEST(PlanFormat, MinShapeRunTimeRoundTripsAndIsVerified) {
  PlanData p = sample_plan();
  p.min_run_ms = 7.25f;
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->data.min_run_ms, 7.25f);
  for (float bad : {-1.f, std::nanf(""), std::numeric_limits<float>::infinity()}) {
    p.min_run_ms = bad;
    Status st = plan::verify_plan(p, 133);
    EXPECT_EQ(st.code(), StatusCode::kInvalidPlan) << bad;
    EXPECT_NE(st.message().find("min_run_ms is"), std::string::npos) << st.message();
  }
}

TEST(PlanFormat, VerifyRejectsStepTimesOfTheWrongCountOrValue) {
  struct Case {
    std::vector<float> ms;
    const char* message;
  };
  const Case cases[] = {
      {{1.f}, "step_ms has 1 entries for 2 steps"},
      {{1.f, 2.f, 3.f}, "step_ms has 3 entries for 2 steps"},
      {{1.f, -0.5f}, "step_ms[1] is -0.500000"},
      {{1.f, std::nanf("")}, "step_ms[1] is nan"},
      {{std::numeric_limits<float>::infinity(), 0.f}, "step_ms[0] is inf"},
  };
  for (const Case& c : cases) {
    PlanData p = sample_plan();
    ASSERT_TRUE(plan::serialize_plan(p).ok());
    p.step_ms = c.ms;
    Status st = plan::verify_plan(p, 133);
    EXPECT_EQ(st.code(), StatusCode::kInvalidPlan) << c.message;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.message();
  }
}

TEST(PlanFormat, VerifyPlanAcceptsTheSampleAndNamesProblems) {
  PlanData p = sample_plan();
  ASSERT_TRUE(plan::serialize_plan(p).ok());
  EXPECT_TRUE(plan::verify_plan(p, 133).ok());
  Status st = plan::verify_plan(p, 100);  // 'e' at 128 + 5 does not fit
  EXPECT_EQ(st.code(), StatusCode::kInvalidPlan);
  EXPECT_NE(st.message().find("weight 2 'e' extends past the end of the weights section (offset 128 + 5 > 100)"),
            std::string::npos)
      << st.message();
}

TEST_F(PlanFileTest, WriteThenReadMapsTheFile) {
  PlanData p = sample_plan();
  std::string file = path("model.plan");
  ASSERT_TRUE(plan::write_plan(p, file).ok());
  // Same bytes as serialize_plan, and no temporary file left behind.
  std::ifstream in(file, std::ios::binary);
  std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(on_disk, plan::serialize_plan(p).value());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  auto loaded = plan::read_plan(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plan_eq(p, loaded->data);
  EXPECT_EQ(loaded->file_size, on_disk.size());
  // Weights are views into the mapping, which they keep alive.
  const auto* base = static_cast<const uint8_t*>(loaded->mapping.get());
  std::vector<Tensor> weights = loaded->data.weight_data;
  for (const Tensor& t : weights) {
    const auto* d = static_cast<const uint8_t*>(t.data());
    EXPECT_GE(d, base);
    EXPECT_LE(d + t.nbytes(), base + loaded->file_size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 64, 0u);
  }
  loaded = Status(StatusCode::kInternal, "dropped");
  EXPECT_TRUE(testing::same_bytes(weights[0], p.weight_data[0]));
}

TEST_F(PlanFileTest, WriteReplacesAnExistingFile) {
  std::string file = path("model.plan");
  PlanData a = sample_plan();
  ASSERT_TRUE(plan::write_plan(a, file).ok());
  PlanData b;
  b.name = "second";
  ASSERT_TRUE(plan::write_plan(b, file).ok());
  auto loaded = plan::read_plan(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->data.name, "second");
}

TEST_F(PlanFileTest, IoErrorsNameThePath) {
  PlanData p = sample_plan();
  std::string bad = path("no/such/dir/model.plan");
  Status st = plan::write_plan(p, bad);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();

  auto r = plan::read_plan(path("missing.plan"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("missing.plan"), std::string::npos);

  r = plan::read_plan(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);

  std::ofstream(path("empty.plan")).close();
  r = plan::read_plan(path("empty.plan"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan);
  EXPECT_NE(r.status().message().find("empty.plan"), std::string::npos) << r.status().message();
}

TEST_F(PlanFileTest, CorruptFileIsRejectedWithPath) {
  PlanData p = sample_plan();
  std::string file = path("model.plan");
  auto bytes = plan::serialize_plan(p).value();
  bytes.back() ^= 1;
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  auto r = plan::read_plan(file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan);
  EXPECT_EQ(r.status().message().rfind("plan '" + file + "': weights checksum mismatch", 0), 0u)
      << r.status().message();
}

}  // namespace
}  // namespace streamrt
