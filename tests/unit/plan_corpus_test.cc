// Seed corpus of the plan fuzz target (fuzz/corpus/plan/): generated here, checked here.
// Files named valid_* must load, corrupt_* must be rejected. To regenerate the committed
// seeds after a format change:
//   STREAMRT_WRITE_PLAN_CORPUS=fuzz/corpus/plan build/bin/streamrt_tests --gtest_filter='PlanCorpus*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kv_cache_test_util.h"
#include "plan/plan.h"
#include "plan_test_util.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using plan::PlanData;
using Seeds = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

std::vector<uint8_t> serialize(PlanData p) { return plan::serialize_plan(p).value(); }

Seeds plan_corpus_seeds() {
  Seeds seeds;
  const auto sample = serialize(testing::sample_plan());
  const auto h = testing::header_of(sample);
  seeds.emplace_back("valid_sample.plan", sample);

  PlanData stripped = testing::sample_plan();
  stripped.weights_stripped = true;
  seeds.emplace_back("valid_stripped.plan", serialize(stripped));

  PlanData identity;
  identity.name = "identity";
  identity.values.push_back({"x", DataType::kInt32, {-1}, {4}, plan::ValueEntry::Kind::kInput, 0, 0, -1});
  identity.values.push_back({"y", DataType::kInt32, {-1}, {4}, plan::ValueEntry::Kind::kOutput, 0, 0, -1});
  identity.inputs.push_back({"x", 0, DataType::kInt32, {-1}, {1}, {2}, {4}});
  identity.outputs.push_back({"y", 1, DataType::kInt32, {-1}, {}, {}, {}});
  ir::Node n;
  n.op_type = "Identity";
  n.inputs = {0};
  n.outputs = {1};
  identity.steps.push_back(n);
  seeds.emplace_back("valid_no_weights.plan", serialize(identity));
  seeds.emplace_back("valid_empty.plan", serialize(PlanData{}));

  auto with = [&](const char* name, auto mutate) {
    auto b = sample;
    mutate(b);
    seeds.emplace_back(name, std::move(b));
  };
  with("corrupt_bad_magic.plan", [](auto& b) { b[3] = 'X'; });
  with("corrupt_version2.plan", [](auto& b) { b[8] = 2; });
  with("corrupt_truncated_header.plan", [](auto& b) { b.resize(40); });
  with("corrupt_truncated_metadata.plan", [&](auto& b) { b.resize(64 + h.metadata_size / 2); });
  with("corrupt_truncated_weights.plan", [](auto& b) { b.resize(b.size() - 10); });
  with("corrupt_metadata_bitflip.plan", [&](auto& b) { b[64 + h.metadata_size / 3] ^= 0x10; });
  with("corrupt_weights_bitflip.plan", [&](auto& b) { b[h.weights_offset + 70] ^= 0x01; });
  with("corrupt_weights_offset.plan", [](auto& b) {
    auto hh = testing::header_of(b);
    hh.weights_offset += 64;
    testing::put_header(b, hh);
  });

  PlanData bad_index = testing::sample_plan();
  bad_index.steps[1].inputs[1] = 1000;
  seeds.emplace_back("corrupt_step_index.plan", serialize(bad_index));
  PlanData bad_arena = testing::sample_plan();
  bad_arena.values[4].arena_offset = 1 << 20;
  seeds.emplace_back("corrupt_arena.plan", serialize(bad_arena));

  PlanData huge = testing::sample_plan();
  std::vector<uint8_t> section(sample.begin() + static_cast<std::ptrdiff_t>(h.weights_offset), sample.end());
  (void)plan::serialize_plan(huge);  // layout
  huge.weights[2].dims = {int64_t{1} << 40};
  huge.weights[2].size = uint64_t{1} << 40;
  huge.values[6].dims = {int64_t{1} << 40};
  seeds.emplace_back("corrupt_huge_weight.plan", plan::assemble_plan(huge, section).value());

  // A KV cache stored with capacity (KvAppend, Attention's kv_capacity), and one whose capacity falls
  // short of its profile.
  const std::vector<uint8_t> kv = testing::build_tiny_kv(DeviceType::kCpu, true).value();
  seeds.emplace_back("valid_kv_append.plan", kv);
  auto kv_plan = plan::read_plan_bytes(kv.data(), kv.size(), nullptr).value().data;
  kv_plan.inputs[3].seq_capacity = testing::kTinyMaxPast - 1;  // past_key
  seeds.emplace_back("corrupt_kv_capacity.plan", serialize(kv_plan));

  std::vector<uint8_t> garbage(200);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 131 + 7);
  std::memcpy(garbage.data() + 4, "SRTP", 4);
  seeds.emplace_back("corrupt_garbage_metadata.plan", testing::wrap_metadata(garbage.data(), garbage.size()));
  return seeds;
}

// valid_* must load; corrupt_* must fail with a message; anything else must just not crash.
void expect_named_outcome(const std::string& name, const std::vector<uint8_t>& bytes) {
  SCOPED_TRACE(name);
  auto r = plan::read_plan_bytes(bytes.data(), bytes.size(), nullptr);
  if (name.rfind("valid_", 0) == 0) {
    EXPECT_TRUE(r.ok()) << r.status().to_string();
  } else if (name.rfind("corrupt_", 0) == 0) {
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().code() == StatusCode::kInvalidPlan ||
                r.status().code() == StatusCode::kIncompatible)
        << r.status().to_string();
    EXPECT_FALSE(r.status().message().empty());
  }
}

TEST(PlanCorpus, SeedsBehaveAsNamed) {
  Seeds seeds = plan_corpus_seeds();
  for (const auto& [name, bytes] : seeds) expect_named_outcome(name, bytes);
  const char* out = std::getenv("STREAMRT_WRITE_PLAN_CORPUS");
  if (!out || !*out) return;
  fs::create_directories(out);
  for (const auto& [name, bytes] : seeds) {
    std::ofstream f(fs::path(out) / name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << name;
  }
}

TEST(PlanCorpus, CommittedCorpusBehavesAsNamed) {
  fs::path dir = fs::path(STREAMRT_SOURCE_DIR) / "fuzz" / "corpus" / "plan";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " not found";
  size_t count = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    expect_named_outcome(e.path().filename().string(), bytes);
    ++count;
  }
  EXPECT_GT(count, 0u);
}

}  // namespace
}  // namespace streamrt
