// The custom-store example of docs/engine_cache.md, compiled and run: an EngineCache over a
// key-value blob store (a map standing in for a database or an object store). The store only
// keeps bytes; build_plan_cached verifies whatever it returns.
#include <gtest/gtest.h>

#include <map>

#include "cache_test_util.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

// --- the example (docs/engine_cache.md) ---------------------------------------------------
class BlobStore {  // your database / object store client
 public:
  std::optional<std::string> get(const std::string& name) const {
    auto it = blobs_.find(name);
    return it == blobs_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  void put(const std::string& name, std::string bytes) { blobs_[name] = std::move(bytes); }
  void erase(const std::string& name) { blobs_.erase(name); }

 private:
  std::map<std::string, std::string> blobs_;
};

class BlobEngineCache : public EngineCache {
 public:
  explicit BlobEngineCache(BlobStore& store) : store_(store) {}
  Result<CacheEntry> load(const CacheKey& key) override {
    auto plan = store_.get(key.hex() + ".plan"), meta = store_.get(key.hex() + ".json");
    if (!plan || !meta) return not_found("no entry " + key.hex());
    return CacheEntry{std::vector<uint8_t>(plan->begin(), plan->end()), *meta};
  }
  Status save(const CacheKey& key, const CacheEntry& entry) override {
    store_.put(key.hex() + ".plan", std::string(entry.plan.begin(), entry.plan.end()));
    store_.put(key.hex() + ".json", entry.metadata);
    return ok_status();
  }
  bool contains(const CacheKey& key) override { return store_.get(key.hex() + ".json").has_value(); }
  Status remove(const CacheKey& key) override {
    store_.erase(key.hex() + ".plan");
    store_.erase(key.hex() + ".json");
    return ok_status();
  }

 private:
  BlobStore& store_;
};
// --- end of the example -------------------------------------------------------------------

TEST(CustomEngineCache, HitsRefitAndBadBlobsAreRebuilt) {
  testing::TempDir dir;
  testing::GemmModel a, b;
  b.seed = 4;
  a.write(dir.file("a.onnx"));
  b.write(dir.file("b.onnx"));
  BlobStore store;
  BlobEngineCache cache(store);
  const BuilderConfig config = testing::batch_config(a.in);
  CachedBuildInfo info;
  ASSERT_TRUE(build_plan_cached(dir.file("a.onnx"), config, cache, &info).ok());
  EXPECT_FALSE(info.hit);
  EXPECT_EQ(info.miss_reason, "first build of this model");  // (the store keeps no records)
  EXPECT_TRUE(cache.contains(info.key));

  auto plan = build_plan_cached(dir.file("b.onnx"), config, cache, &info);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(info.hit);
  const std::vector<float> x = testing::ramp(2 * b.in);
  testing::expect_near(testing::run_plan(*plan, x, 2, b.in, b.out), b.reference(x, 2));

  // The store hands back damaged bytes: detected (SHA-256 in the metadata), removed, rebuilt.
  std::string blob = *store.get(info.key.hex() + ".plan");
  blob[blob.size() / 2] ^= 1;
  store.put(info.key.hex() + ".plan", blob);
  plan = build_plan_cached(dir.file("b.onnx"), config, cache, &info);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(info.hit);
  EXPECT_TRUE(info.corrupt_entry_removed);
  EXPECT_TRUE(info.saved);
  testing::expect_near(testing::run_plan(*plan, x, 2, b.in, b.out), b.reference(x, 2));
}

}  // namespace
}  // namespace streamrt
