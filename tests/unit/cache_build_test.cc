// build_plan_cached: misses build and store a stripped entry, hits refit the current model's
// weights (the result equals a fresh build byte for byte), misses say why, bad entries are
// removed and rebuilt.
#include <gtest/gtest.h>

#include <filesystem>

#include "cache_test_util.h"
#include "builder/build_steps.h"
#include "builder/tactics.h"
#include "onnx/importer.h"
#include "plan/plan.h"
#include "runtime/refit_core.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::GemmModel;
using testing::TempDir;

const std::string kModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models";

std::vector<uint8_t> build_direct(const std::string& path, const BuilderConfig& c) {
  auto bytes = build_plan_from_onnx(path, c);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

std::vector<uint8_t> build_cached(const std::string& path, const BuilderConfig& c, EngineCache& cache,
                                  CachedBuildInfo* info) {
  auto bytes = build_plan_cached(path, c, cache, info);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// Writes dir/a.onnx and dir/<b_name>.onnx.
void write_models(const TempDir& dir, GemmModel& a, GemmModel& b, const std::string& b_name) {
  a.write(dir.file("a.onnx"));
  b.write(dir.file(b_name + ".onnx"));
}

TEST(CachedBuild, MissThenHitWithTheNewModelsWeights) {
  TempDir dir;
  GemmModel a, b;
  b.seed = 7;
  write_models(dir, a, b, "b");
  const BuilderConfig config = testing::batch_config(a.in);
  MemoryEngineCache cache;

  CachedBuildInfo info;
  auto plan_a = build_cached(dir.file("a.onnx"), config, cache, &info);
  EXPECT_FALSE(info.hit);
  EXPECT_EQ(info.miss_reason, "first build of this model");
  EXPECT_TRUE(info.saved);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(plan_a, build_direct(dir.file("a.onnx"), config));

  // The entry holds no weights: it is the stripped plan.
  auto entry = cache.load(info.key);
  ASSERT_TRUE(entry.ok());
  auto stripped = plan::read_plan_bytes(entry->plan.data(), entry->plan.size(), nullptr);
  ASSERT_TRUE(stripped.ok()) << stripped.status().to_string();
  EXPECT_TRUE(stripped->data.weights_stripped);
  EXPECT_LT(entry->plan.size(), plan_a.size());

  // Same architecture, other weights: a hit, and the plan is b's.
  auto plan_b = build_cached(dir.file("b.onnx"), config, cache, &info);
  EXPECT_TRUE(info.hit);
  EXPECT_TRUE(info.miss_reason.empty());
  EXPECT_FALSE(info.saved);
  EXPECT_EQ(plan_b, build_direct(dir.file("b.onnx"), config));
  const std::vector<float> x = testing::ramp(3 * a.in);
  testing::expect_near(testing::run_plan(plan_b, x, 3, b.in, b.out), b.reference(x, 3));
  // a's outputs differ from b's, so the check above tells the weights apart.
  EXPECT_GT(std::fabs(a.reference(x, 3)[0] - b.reference(x, 3)[0]) + std::fabs(a.reference(x, 3)[1] - b.reference(x, 3)[1]),
            1e-3);
}

// One model "m.onnx" built through a MemoryEngineCache.
class CachedBuildOfOneModel : public ::testing::Test {
 protected:
  void SetUp() override { m.write(path); }
  std::vector<uint8_t> build() { return build_cached(path, config, cache, &info); }

  TempDir dir;
  GemmModel m;
  const std::string path = dir.file("m.onnx");
  MemoryEngineCache cache;
  BuilderConfig config = testing::batch_config(m.in);
  CachedBuildInfo info;
};

TEST_F(CachedBuildOfOneModel, MissesSayWhatChanged) {
  build();
  EXPECT_EQ(info.miss_reason, "first build of this model");

  config.float_precision = DataType::kFloat16;
  build();
  EXPECT_FALSE(info.hit);
  EXPECT_EQ(info.miss_reason, "builder option changed: float_precision");

  m.relu = false;  // Sigmoid: the graph changed (same file, same options)
  m.write(path);
  build();
  EXPECT_EQ(info.miss_reason, "graph changed: ops, attributes or edges");

  ASSERT_TRUE(cache.remove(info.key).ok());
  build();
  EXPECT_EQ(info.miss_reason, "entry was evicted or removed");
  build();
  EXPECT_TRUE(info.hit);
}

TEST_F(CachedBuildOfOneModel, StripWeightsIsServedFromTheSameEntry) {
  build();
  config.strip_weights = true;
  auto stripped = build();
  EXPECT_TRUE(info.hit);
  EXPECT_EQ(stripped, build_direct(path, config));
  auto read = plan::read_plan_bytes(stripped.data(), stripped.size(), nullptr);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.weights_stripped);
}

TEST(CachedBuild, CorruptedDiskEntryIsDetectedRemovedAndRebuilt) {
  TempDir dir;
  GemmModel m;
  m.write(dir.file("m.onnx"));
  auto cache = DiskEngineCache::open(dir.file("cache"), 1 << 30);
  ASSERT_TRUE(cache.ok());
  const BuilderConfig config = testing::batch_config(m.in);
  CachedBuildInfo info;
  const auto want = build_cached(dir.file("m.onnx"), config, **cache, &info);
  const std::string plan_file = dir.file("cache") + "/entries/" + info.key.hex() + "/plan";
  ASSERT_TRUE(fs::exists(plan_file));
  {
    std::fstream f(plan_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  auto got = build_cached(dir.file("m.onnx"), config, **cache, &info);
  EXPECT_FALSE(info.hit);
  EXPECT_TRUE(info.corrupt_entry_removed);
  EXPECT_EQ(info.miss_reason, "the cached entry was unusable and was removed");
  EXPECT_TRUE(info.saved);
  EXPECT_EQ(got, want);
  build_cached(dir.file("m.onnx"), config, **cache, &info);  // the rebuilt entry is good
  EXPECT_TRUE(info.hit);
}

// An entry that verifies (right checksum) but holds another architecture's plan: a store that
// returns the wrong bytes, or a key part someone forgot. The structure check catches it.
TEST(CachedBuild, EntryForAnotherStructureIsNotUsed) {
  TempDir dir;
  GemmModel a, wide;
  wide.out = 5;
  write_models(dir, a, wide, "wide");
  const BuilderConfig config = testing::batch_config(a.in);
  MemoryEngineCache cache;
  CachedBuildInfo ia, iw;
  build_cached(dir.file("a.onnx"), config, cache, &ia);
  build_cached(dir.file("wide.onnx"), config, cache, &iw);
  ASSERT_NE(ia.key, iw.key);
  // Store wide's entry under a's key, with metadata that names a's key.
  CacheEntry e = cache.load(iw.key).value();
  std::string meta = e.metadata;
  meta.replace(meta.find(iw.key.hex()), 64, ia.key.hex());
  ASSERT_TRUE(cache.save(ia.key, CacheEntry{e.plan, meta}).ok());
  auto plan = build_cached(dir.file("a.onnx"), config, cache, &ia);
  EXPECT_FALSE(ia.hit);
  EXPECT_TRUE(ia.corrupt_entry_removed);
  EXPECT_EQ(plan, build_direct(dir.file("a.onnx"), config));
}

// The fixtures: a hit gives the same plan as a direct build.
TEST(CachedBuild, RealModelsHitWithIdenticalPlans) {
  struct Fixture {
    const char* name;
    BuilderConfig config;
  };
  std::vector<Fixture> fixtures(4);
  fixtures[0] = {"mlp", {}};
  fixtures[0].config.profiles["input"] = {{1, 784}, {4, 784}, {8, 784}};
  fixtures[1] = {"lenet_bn", {}};
  fixtures[1].config.profiles["input"] = {{1, 1, 28, 28}, {2, 1, 28, 28}, {4, 1, 28, 28}};
  fixtures[2] = {"tiny_gpt", {}};
  fixtures[2].config.profiles["input_ids"] = {{1, 1}, {2, 16}, {2, 64}};
  fixtures[3] = {"squeezenet1_1", {}};
  TempDir dir;
  auto cache = DiskEngineCache::open(dir.file("cache"), 1 << 30);
  ASSERT_TRUE(cache.ok());
  for (const Fixture& f : fixtures) {
    const std::string path = kModels + "/" + f.name + "/model.onnx";
    CachedBuildInfo info;
    auto miss = build_cached(path, f.config, **cache, &info);
    EXPECT_FALSE(info.hit) << f.name;
    auto hit = build_cached(path, f.config, **cache, &info);
    EXPECT_TRUE(info.hit) << f.name;
    EXPECT_EQ(hit, miss) << f.name;
  }
  EXPECT_EQ((*cache)->list()->size(), fixtures.size());
}

TEST(CachedBuild, EntryLargerThanTheCacheIsBuiltButNotKept) {
  TempDir dir;
  GemmModel m;
  m.write(dir.file("m.onnx"));
  auto cache = DiskEngineCache::open(dir.file("cache"), 100);
  ASSERT_TRUE(cache.ok());
  CachedBuildInfo info;
  auto plan = build_cached(dir.file("m.onnx"), testing::batch_config(m.in), **cache, &info);
  EXPECT_FALSE(plan.empty());
  EXPECT_FALSE(info.saved);
  EXPECT_EQ(info.save_error, "the cache did not keep the entry");
  EXPECT_TRUE((*cache)->list()->empty());
}

// Build stages may record choices as step attributes the model does not have (a GEMM tactic):
// a cached plan carrying them still has the model's structure; a changed model attribute does not.
TEST(CachedBuild, StepAttributesOnlyThePlanHasAreNotStructure) {
  TempDir dir;
  GemmModel m;
  m.write(dir.file("m.onnx"));
  const BuilderConfig config = testing::batch_config(m.in);
  auto prepare = [&]() {
    auto g = onnx_import::import_onnx_file(dir.file("m.onnx"));
    EXPECT_TRUE(g.ok());
    auto p = builder::prepare_graph(std::move(g).value(), "m.onnx", config, nullptr);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return std::move(p).value();
  };
  builder::PreparedGraph prep = prepare();
  auto plan = builder::finish_plan(prep, config, nullptr);
  ASSERT_TRUE(plan.ok());
  plan->steps[0].attrs[builder::kLtAlgoAttr] = ir::Attribute::make_ints(std::vector<int64_t>(19, 7));
  builder::PreparedGraph again = prepare();
  EXPECT_TRUE(refit::check_structure(*plan, again.graph, "m.onnx").ok());
  plan->steps[0].attrs["alpha"] = ir::Attribute::make_float(0.5f);
  Status st = refit::check_structure(*plan, again.graph, "m.onnx");
  EXPECT_NE(st.message().find("step 0 node 'gemm' (Gemm): attribute 'alpha' differs"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace streamrt
