// `compile` through the engine cache: each engine of the graph-break model (two engines around a
// portable Softmax) misses and is stored on the first compile and hits on the next; a hit gives the
// same program bytes and outputs as an uncached compile, also when the weight values changed (the
// current weights are refitted) and with weight streaming; a changed subgraph misses alone and
// says why; a store that fails to save or returns a corrupt entry never changes the program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "delegate_test_util.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// The graph-break model with other weight values of the same scale (each W's values reversed)
// and, when `sigmoid`, engine 1's Relu replaced by a Sigmoid (a different architecture there).
onnx::ModelProto variant(bool new_weights, bool sigmoid) {
  onnx::ModelProto m = graph_break_model();
  auto* g = m.mutable_graph();
  if (new_weights)
    for (auto& w : *g->mutable_initializer()) {
      std::vector<float> v(w.raw_data().size() / sizeof(float));
      std::memcpy(v.data(), w.raw_data().data(), v.size() * sizeof(float));
      std::reverse(v.begin(), v.end());
      w.set_raw_data(v.data(), v.size() * sizeof(float));
    }
  if (sigmoid)
    for (auto& n : *g->mutable_node())
      if (n.name() == "relu2") n.set_op_type("Sigmoid");
  return m;
}

class CompileCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    onnx_ = new std::string(write_graph_break_model(dir_->path().string()));
  }
  static void TearDownTestSuite() {
    delete onnx_;
    delete dir_;
  }

  // Writes a variant of the model to `name` (one path per variant, so that the cache's records
  // of different tests do not meet).
  static std::string write_variant(const std::string& name, bool new_weights, bool sigmoid) {
    const std::string path = dir_->file(name);
    write_file(path, serialize(variant(new_weights, sigmoid)));
    return path;
  }

  // compile_break's options, through `cache`.
  static delegate::CompileOptions options(EngineCache* cache, bool weight_streaming = false) {
    delegate::CompileOptions o;
    o.builder.device = DeviceType::kCpu;
    o.builder.weight_streaming = weight_streaming;
    o.fallback_ops = {"Softmax"};
    o.cache = cache;
    return o;
  }
  static delegate::CompiledProgram compile_ok(const std::string& path, EngineCache* cache,
                                              bool weight_streaming = false) {
    auto r = delegate::compile_onnx(path, options(cache, weight_streaming));
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : delegate::CompiledProgram{};
  }

  // Loads `p` (through a file, as a user would) and runs forward on the test input.
  static std::vector<float> run(const delegate::CompiledProgram& p, const std::string& name,
                                const LoadBackendOptionsMap& options = {}) {
    Module m(write_compiled(p, dir_->file(name)));
    Status st = m.load(options);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
    auto y = run_forward(m, break_model_input());
    EXPECT_TRUE(y.ok()) << y.status().to_string();
    return y.ok() ? *y : std::vector<float>{};
  }

  // Every engine hit (`hit`) or missed for `reason`.
  static void expect_engines(const delegate::CompiledProgram& p, bool hit, const std::string& reason = "") {
    ASSERT_EQ(p.report.engines.size(), 2u);
    for (const auto& e : p.report.engines) {
      ASSERT_TRUE(e.cache.has_value()) << e.name;
      EXPECT_EQ(e.cache->hit, hit) << e.name;
      EXPECT_EQ(e.cache->miss_reason, reason) << e.name;
      if (!hit) {
        EXPECT_TRUE(e.cache->saved) << e.name << ": " << e.cache->save_error;
      }
    }
  }

  static TempDir* dir_;
  static std::string* onnx_;
};

TempDir* CompileCache::dir_ = nullptr;
std::string* CompileCache::onnx_ = nullptr;

TEST_F(CompileCache, FirstCompileMissesSecondHitsAndTheProgramIsTheSame) {
  const auto plain = compile_ok(*onnx_, nullptr);
  for (const auto& e : plain.report.engines) EXPECT_FALSE(e.cache.has_value()) << "no cache, no cache report";

  MemoryEngineCache cache;
  const auto first = compile_ok(*onnx_, &cache);
  expect_engines(first, false, "first build of this model");
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(first.report.engines[0].cache->key, first.report.engines[1].cache->key);

  const auto second = compile_ok(*onnx_, &cache);
  expect_engines(second, true);
  EXPECT_EQ(cache.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second.report.engines[i].cache->key, first.report.engines[i].cache->key);
    EXPECT_EQ(second.report.engines[i].steps, plain.report.engines[i].steps);
  }
  // A hit refits the model's weights into the cached stripped plan: the engine records (and every
  // other segment) equal an uncached compile's byte for byte.
  EXPECT_EQ(first.segments, plain.segments);
  EXPECT_EQ(second.segments, plain.segments);

  const auto want = plain_engine_output(*onnx_, break_model_input());
  const auto y_plain = run(plain, "plain.pte"), y_hit = run(second, "hit.pte");
  EXPECT_LE(max_abs_diff(y_plain, want), 1e-5);
  EXPECT_EQ(y_hit, y_plain);
}

TEST_F(CompileCache, NewWeightValuesHitAndRunTheNewWeights) {
  const std::string path = write_variant("retrained.onnx", false, false);
  MemoryEngineCache cache;
  const auto old_program = compile_ok(path, &cache);
  expect_engines(old_program, false, "first build of this model");
  const auto y_old = run(old_program, "old.pte");

  // Same architecture, other values, same path: same keys, so both engines hit.
  write_file(path, serialize(variant(true, false)));
  const auto hit = compile_ok(path, &cache);
  expect_engines(hit, true);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(hit.report.engines[i].cache->key, old_program.report.engines[i].cache->key);

  const auto fresh = compile_ok(path, nullptr);
  EXPECT_EQ(hit.segments, fresh.segments);
  const auto y_hit = run(hit, "new_hit.pte"), y_fresh = run(fresh, "new_fresh.pte");
  EXPECT_EQ(y_hit, y_fresh);
  EXPECT_LE(max_abs_diff(y_fresh, plain_engine_output(path, break_model_input())), 1e-5);
  // The new weights matter: a hit that kept the cached program's weights would fail here.
  EXPECT_GT(max_abs_diff(y_hit, y_old), 1e-2);
}

TEST_F(CompileCache, AChangedSubgraphMissesAloneAndSaysWhy) {
  const std::string path = write_variant("edited.onnx", false, false);
  MemoryEngineCache cache;
  const auto before = compile_ok(path, &cache);
  expect_engines(before, false, "first build of this model");

  write_file(path, serialize(variant(false, true)));  // engine 1: Relu -> Sigmoid
  const auto after = compile_ok(path, &cache);
  ASSERT_EQ(after.report.engines.size(), 2u);
  const auto& e0 = *after.report.engines[0].cache;
  const auto& e1 = *after.report.engines[1].cache;
  EXPECT_TRUE(e0.hit);
  EXPECT_EQ(e0.key, before.report.engines[0].cache->key);
  EXPECT_FALSE(e1.hit);
  EXPECT_NE(e1.key, before.report.engines[1].cache->key);
  // Each engine has its own record, so the miss names what changed in that subgraph.
  EXPECT_EQ(e1.miss_reason, "graph changed: ops, attributes or edges");
  EXPECT_TRUE(e1.saved);
  EXPECT_EQ(cache.size(), 3u);

  const auto fresh = compile_ok(path, nullptr);
  EXPECT_EQ(after.segments, fresh.segments);
  EXPECT_EQ(run(after, "edited_hit.pte"), run(fresh, "edited_fresh.pte"));
}

TEST_F(CompileCache, WeightStreamingEnginesHitWithTheirStreamableWeights) {
  MemoryEngineCache cache;
  compile_ok(*onnx_, &cache, true);
  const auto hit = compile_ok(*onnx_, &cache, true);
  expect_engines(hit, true);
  EXPECT_EQ(hit.report.engines[0].streamable_size, kEngine0Streamable);
  EXPECT_EQ(hit.report.engines[1].streamable_size, kEngine1Streamable);
  const auto fresh = compile_ok(*onnx_, nullptr, true);
  EXPECT_EQ(hit.segments, fresh.segments);
  // Streaming everything (budget 0) gives the plain engine's outputs.
  const auto y = run(hit, "streaming_hit.pte", srt_options("weight_streaming_budget", std::string("0")));
  EXPECT_LE(max_abs_diff(y, plain_engine_output(*onnx_, break_model_input())), 1e-5);

  // Streaming is a builder option: without it the keys differ.
  const auto other = compile_ok(*onnx_, &cache, false);
  for (const auto& e : other.report.engines) {
    EXPECT_FALSE(e.cache->hit);
    EXPECT_EQ(e.cache->miss_reason, "builder option changed: weight_streaming");
  }
}

TEST_F(CompileCache, DiskCacheHitsAcrossOpenings) {
  TempDir cache_dir;
  {
    auto cache = DiskEngineCache::open(cache_dir.path().string(), kDefaultCacheMaxBytes);
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    expect_engines(compile_ok(*onnx_, cache->get()), false, "first build of this model");
  }
  auto cache = DiskEngineCache::open(cache_dir.path().string(), kDefaultCacheMaxBytes);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  const auto hit = compile_ok(*onnx_, cache->get());
  expect_engines(hit, true);
  EXPECT_EQ(hit.segments, compile_ok(*onnx_, nullptr).segments);
  auto entries = (*cache)->list();
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  std::vector<std::string> names;
  for (const auto& e : *entries) names.push_back(e.engine_name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"brk_engine0", "brk_engine1"}));
}

// A store that refuses every save: the compile succeeds, every engine reports the failure.
class FullStore : public MemoryEngineCache {
 public:
  Status save(const CacheKey&, const CacheEntry&) override { return io_error("disk full (test)"); }
};

TEST_F(CompileCache, AFailedSaveStillCompiles) {
  FullStore cache;
  const auto p = compile_ok(*onnx_, &cache);
  ASSERT_EQ(p.report.engines.size(), 2u);
  for (const auto& e : p.report.engines) {
    ASSERT_TRUE(e.cache.has_value());
    EXPECT_FALSE(e.cache->hit);
    EXPECT_FALSE(e.cache->saved);
    EXPECT_NE(e.cache->save_error.find("disk full (test)"), std::string::npos) << e.cache->save_error;
  }
  EXPECT_EQ(p.segments, compile_ok(*onnx_, nullptr).segments);
}

// A store whose entries come back with one byte flipped: each is removed and rebuilt.
class FlippingStore : public MemoryEngineCache {
 public:
  Result<CacheEntry> load(const CacheKey& key) override {
    SRT_ASSIGN_OR_RETURN(CacheEntry e, MemoryEngineCache::load(key));
    if (!e.plan.empty()) e.plan[e.plan.size() / 2] ^= 0x5a;
    return e;
  }
};

TEST_F(CompileCache, ACorruptEntryIsRebuilt) {
  FlippingStore cache;
  compile_ok(*onnx_, &cache);
  const auto p = compile_ok(*onnx_, &cache);
  for (const auto& e : p.report.engines) {
    ASSERT_TRUE(e.cache.has_value());
    EXPECT_FALSE(e.cache->hit);
    EXPECT_TRUE(e.cache->corrupt_entry_removed);
    EXPECT_EQ(e.cache->miss_reason, "the cached entry was unusable and was removed");
  }
  EXPECT_EQ(p.segments, compile_ok(*onnx_, nullptr).segments);
}

TEST_F(CompileCache, BuildErrorsReadAsWithoutACache) {
  // Weight streaming with --fp16 is refused when each engine is built (prepare_graph).
  auto compile_fp16 = [&](EngineCache* cache) {
    delegate::CompileOptions o = options(cache, true);
    o.builder.float_precision = DataType::kFloat16;
    return delegate::compile_onnx(*onnx_, o);
  };
  MemoryEngineCache cache;
  auto with = compile_fp16(&cache), without = compile_fp16(nullptr);
  ASSERT_FALSE(with.ok());
  EXPECT_EQ(with.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(with.status().message().find("building engine 'brk_engine0'"), std::string::npos)
      << with.status().to_string();
  EXPECT_EQ(with.status().to_string(), without.status().to_string());
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace streamrt
