// EngineCache stores: MemoryEngineCache and DiskEngineCache (layout, LRU eviction, sizes on
// disk, corrupt entries, leftovers of killed writers, build locks, default directory).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "cache/entry.h"
#include "plan/plan.h"
#include "onnx_model_util.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

CacheKey key_n(uint8_t n) {
  CacheKey k;
  k.digest[0] = n;
  k.digest[31] = static_cast<uint8_t>(0xa0 + n);
  return k;
}

// A verifiable entry whose "plan" is `size` bytes derived from n (the stores do not parse plans).
CacheEntry entry_n(uint8_t n, size_t size = 10000) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 31 + n);
  plan::PlanData p;
  p.name = "engine" + std::to_string(n);
  return cache::make_entry(std::move(bytes), key_n(n), p);
}

std::unique_ptr<DiskEngineCache> open_disk(const std::string& dir, uint64_t max = 1ull << 40) {
  auto c = DiskEngineCache::open(dir, max);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

std::vector<CacheKey> keys_in_lru_order(const DiskEngineCache& c) {
  std::vector<CacheKey> out;
  auto list = c.list();
  EXPECT_TRUE(list.ok());
  if (list.ok())
    for (const auto& e : *list) out.push_back(e.key);
  return out;
}

TEST(MemoryEngineCache, SaveLoadContainsRemove) {
  MemoryEngineCache c;
  EXPECT_EQ(c.load(key_n(1)).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(c.save(key_n(1), entry_n(1)).ok());
  EXPECT_TRUE(c.contains(key_n(1)));
  EXPECT_FALSE(c.contains(key_n(2)));
  auto e = c.load(key_n(1));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->plan, entry_n(1).plan);
  EXPECT_TRUE(cache::verify_entry(*e, key_n(1)).ok());
  ASSERT_TRUE(c.remove(key_n(1)).ok());
  EXPECT_FALSE(c.contains(key_n(1)));
  EXPECT_TRUE(c.remove(key_n(1)).ok());  // absent: fine
  EXPECT_FALSE(c.last_key("m").has_value());
  CacheKeyInfo info{key_n(3), {{"graph.nodes", "ab"}}};
  c.record_key("m", info);
  ASSERT_TRUE(c.last_key("m").has_value());
  EXPECT_EQ(c.last_key("m")->key, key_n(3));
}

TEST(CacheEntry, VerificationNamesWhatIsWrong) {
  CacheEntry e = entry_n(1);
  EXPECT_TRUE(cache::verify_entry(e, key_n(1)).ok());
  EXPECT_NE(cache::verify_entry(e, key_n(2)).message().find("names another key"), std::string::npos);
  CacheEntry flipped = e;
  flipped.plan[5000] ^= 1;
  EXPECT_NE(cache::verify_entry(flipped, key_n(1)).message().find("checksum mismatch"), std::string::npos);
  CacheEntry shorter = e;
  shorter.plan.pop_back();
  EXPECT_NE(cache::verify_entry(shorter, key_n(1)).message().find("9999 bytes"), std::string::npos);
  for (std::string bad : {std::string("not json"), std::string("[1,2]"), std::string("{\"format\": 2}"),
                          std::string("{\"format\": 1, \"key\": 5}"), std::string(70000, ' ')}) {
    CacheEntry m = e;
    m.metadata = bad;
    EXPECT_EQ(cache::verify_entry(m, key_n(1)).code(), StatusCode::kInvalidPlan) << bad.substr(0, 20);
  }
  // Deep nesting is refused before a DOM is built; brackets inside strings do not count.
  CacheEntry deep = e;
  deep.metadata = e.metadata.substr(0, e.metadata.size() - 1) + ", \"x\": " + std::string(9, '[') + std::string(9, ']') + "}";
  EXPECT_NE(cache::verify_entry(deep, key_n(1)).message().find("8 levels of nesting"), std::string::npos);
  CacheEntry shallow = e;
  shallow.metadata = e.metadata.substr(0, e.metadata.size() - 1) + ", \"x\": [[\"[[[[[[[[[[\\\"\"]]}";
  EXPECT_TRUE(cache::verify_entry(shallow, key_n(1)).ok()) << shallow.metadata;
}

// The fuzz seeds (fuzz/corpus/cache_entry: "<metadata>\0<plan>", all-zero key) are what
// their names say: valid_* verify, corrupt_* do not; of the valid ones only valid_stripped_plan
// holds a good plan.
TEST(CacheEntry, FuzzSeedsAreWhatTheirNamesSay) {
  const fs::path dir = fs::path(STREAMRT_SOURCE_DIR) / "fuzz" / "corpus" / "cache_entry";
  size_t seen = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    std::ifstream in(f.path(), std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t nul = all.find('\0');
    CacheEntry e{{}, all.substr(0, nul)};
    if (nul != std::string::npos) e.plan.assign(all.begin() + static_cast<long>(nul) + 1, all.end());
    const std::string name = f.path().filename().string();
    Status st = cache::verify_entry(e, CacheKey{});
    EXPECT_EQ(st.ok(), name.rfind("valid_", 0) == 0) << name << ": " << st.to_string();
    if (st.ok()) {
      auto plan = plan::read_plan_bytes(e.plan.data(), e.plan.size(), nullptr);
      EXPECT_EQ(plan.ok(), name == "valid_stripped_plan") << name;
    }
    ++seen;
  }
  EXPECT_GE(seen, 10u);
}

TEST(DiskEngineCache, LayoutRoundTripAndPersistence) {
  TempDir tmp;
  const std::string dir = tmp.file("cache");
  {
    auto c = open_disk(dir);
    ASSERT_TRUE(c);
    for (const char* sub : {"entries", "locks", "tmp", "models"}) EXPECT_TRUE(fs::is_directory(dir + "/" + sub)) << sub;
    EXPECT_TRUE(fs::exists(dir + "/CACHEDIR.TAG"));
    EXPECT_EQ(c->load(key_n(1)).status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
    EXPECT_TRUE(c->contains(key_n(1)));
    const std::string d = dir + "/entries/" + key_n(1).hex();
    EXPECT_TRUE(fs::exists(d + "/plan") && fs::exists(d + "/meta.json") && fs::exists(d + "/last_use"));
    EXPECT_TRUE(fs::is_empty(dir + "/tmp"));  // nothing left behind
  }
  auto c = open_disk(dir);  // another instance (as another process would) sees it
  auto e = c->load(key_n(1));
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->plan, entry_n(1).plan);
  EXPECT_TRUE(cache::verify_entry(*e, key_n(1)).ok());
  ASSERT_TRUE(c->save(key_n(1), entry_n(1, 500)).ok());  // replaces
  EXPECT_EQ(c->load(key_n(1))->plan.size(), 500u);
  ASSERT_TRUE(c->remove(key_n(1)).ok());
  EXPECT_FALSE(c->contains(key_n(1)));
  EXPECT_EQ(c->load(key_n(1)).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(c->remove(key_n(1)).ok());
}

TEST(DiskEngineCache, OpenFailsOnAFileAndAnEmptyPath) {
  TempDir tmp;
  testing::write_file(tmp.file("file"), "x");
  EXPECT_EQ(DiskEngineCache::open(tmp.file("file"), 100).status().code(), StatusCode::kIoError);
  EXPECT_EQ(DiskEngineCache::open("", 100).status().code(), StatusCode::kInvalidArgument);
}

// Size of one entry_n() entry on this file system.
uint64_t entry_disk_size(const TempDir& tmp) {
  auto probe = open_disk(tmp.file("probe"));
  EXPECT_TRUE(probe->save(key_n(200), entry_n(200)).ok());
  return probe->list().value().at(0).size;
}

TEST(DiskEngineCache, EvictsLeastRecentlyUsedAndHitsRefreshLastUse) {
  TempDir tmp;
  const uint64_t e = entry_disk_size(tmp);
  ASSERT_GT(e, 10000u);  // measured on disk: plan + metadata + directory
  auto c = open_disk(tmp.file("cache"), 3 * e + e / 2);
  for (uint8_t n : {1, 2, 3}) ASSERT_TRUE(c->save(key_n(n), entry_n(n)).ok());
  EXPECT_EQ(keys_in_lru_order(*c), (std::vector<CacheKey>{key_n(1), key_n(2), key_n(3)}));
  ASSERT_TRUE(c->load(key_n(1)).ok());  // 1 is now the most recently used
  EXPECT_EQ(keys_in_lru_order(*c), (std::vector<CacheKey>{key_n(2), key_n(3), key_n(1)}));
  ASSERT_TRUE(c->save(key_n(4), entry_n(4)).ok());  // evicts 2
  EXPECT_EQ(keys_in_lru_order(*c), (std::vector<CacheKey>{key_n(3), key_n(1), key_n(4)}));
  ASSERT_TRUE(c->load(key_n(3)).ok());
  ASSERT_TRUE(c->save(key_n(5), entry_n(5)).ok());  // evicts 1
  EXPECT_EQ(keys_in_lru_order(*c), (std::vector<CacheKey>{key_n(4), key_n(3), key_n(5)}));
  EXPECT_LE(c->total_size().value(), c->max_bytes());
}

TEST(DiskEngineCache, SizesAreMeasuredOnDiskAcrossInstances) {
  TempDir tmp;
  const uint64_t e = entry_disk_size(tmp);
  const std::string dir = tmp.file("cache");
  auto first = open_disk(dir, 3 * e + e / 2), second = open_disk(dir, 3 * e + e / 2);
  ASSERT_TRUE(first->save(key_n(1), entry_n(1)).ok());
  ASSERT_TRUE(first->save(key_n(2), entry_n(2)).ok());
  // `second` never saw those saves; its eviction still counts them.
  ASSERT_TRUE(second->save(key_n(3), entry_n(3)).ok());
  ASSERT_TRUE(second->save(key_n(4), entry_n(4)).ok());
  EXPECT_EQ(keys_in_lru_order(*first), (std::vector<CacheKey>{key_n(2), key_n(3), key_n(4)}));
}

TEST(DiskEngineCache, EntryLargerThanTheCacheIsNotStored) {
  TempDir tmp;
  auto c = open_disk(tmp.file("cache"), 5000);
  ASSERT_TRUE(c->save(key_n(1), entry_n(1, 6000)).ok());
  EXPECT_FALSE(c->contains(key_n(1)));
}

TEST(DiskEngineCache, ListShowsSizeTimesAndEngine) {
  TempDir tmp;
  auto c = open_disk(tmp.file("cache"));
  const int64_t before = static_cast<int64_t>(std::time(nullptr));
  ASSERT_TRUE(c->save(key_n(7), entry_n(7)).ok());
  auto list = c->list();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  const DiskCacheEntryInfo& i = list->front();
  EXPECT_EQ(i.key, key_n(7));
  EXPECT_EQ(i.engine_name, "engine7");
  EXPECT_GE(i.size, 10000u);
  EXPECT_GE(i.created, before);
  EXPECT_LE(i.created, before + 5);
  EXPECT_GE(i.last_use, i.created);
}

void flip_byte(const std::string& path, long offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, offset), 1);
  b ^= 0x40;
  ASSERT_EQ(::pwrite(fd, &b, 1, offset), 1);
  ::close(fd);
}

TEST(DiskEngineCache, CorruptEntryIsReportedAndRemoved) {
  TempDir tmp;
  auto c = open_disk(tmp.file("cache"));
  const std::string d = tmp.file("cache") + "/entries/";
  ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
  flip_byte(d + key_n(1).hex() + "/plan", 1234);
  auto e = c->load(key_n(1));
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidPlan);
  EXPECT_NE(e.status().message().find("checksum mismatch"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("removed"), std::string::npos);
  EXPECT_FALSE(fs::exists(d + key_n(1).hex()));
  // A truncated metadata file and a missing plan file are corrupt too (found by prune).
  ASSERT_TRUE(c->save(key_n(2), entry_n(2)).ok());
  ASSERT_TRUE(c->save(key_n(3), entry_n(3)).ok());
  ASSERT_TRUE(c->save(key_n(4), entry_n(4)).ok());
  fs::resize_file(d + key_n(2).hex() + "/meta.json", 10);
  fs::remove(d + key_n(3).hex() + "/meta.json");
  auto rep = c->prune();
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->broken, 2u);
  EXPECT_EQ(keys_in_lru_order(*c), std::vector<CacheKey>{key_n(4)});
}

TEST(DiskEngineCache, PruneRemovesLeftoversOfKilledWritersButNotLiveOnes) {
  TempDir tmp;
  const std::string dir = tmp.file("cache"), t = dir + "/tmp/";
  auto c = open_disk(dir);
  fs::create_directories(t + "dead-" + key_n(1).hex() + "-1-0");             // a killed remover
  testing::write_file(t + "dead-" + key_n(1).hex() + "-1-0/plan", "p");
  fs::create_directories(t + "stage-" + key_n(2).hex() + "-2-0");             // lock file gone
  fs::create_directories(t + "stage-" + key_n(3).hex() + "-3-0");             // unlocked lock
  testing::write_file(t + "stage-" + key_n(3).hex() + "-3-0.lock", "");
  fs::create_directories(t + "stage-" + key_n(4).hex() + "-4-0");             // a live writer
  const std::string live_lock = t + "stage-" + key_n(4).hex() + "-4-0.lock";
  testing::write_file(live_lock, "");
  int fd = ::open(live_lock.c_str(), O_RDWR);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  // flock() locks belong to open file descriptions: the cache's own open+flock conflicts with
  // ours even in this process, just as another process's would.
  auto rep = c->prune();
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->orphans, 3u);
  EXPECT_FALSE(fs::exists(t + "dead-" + key_n(1).hex() + "-1-0"));
  EXPECT_FALSE(fs::exists(t + "stage-" + key_n(2).hex() + "-2-0"));
  EXPECT_FALSE(fs::exists(t + "stage-" + key_n(3).hex() + "-3-0"));
  EXPECT_TRUE(fs::exists(t + "stage-" + key_n(4).hex() + "-4-0"));
  ::close(fd);
}

TEST(DiskEngineCache, BuildLockIsExclusivePerKey) {
  TempDir tmp;
  auto c = open_disk(tmp.file("cache"));
  auto held = c->lock(key_n(1));
  ASSERT_TRUE(held.ok());
  std::atomic<bool> got_same{false}, got_other{false};
  std::thread same([&] {
    auto l = c->lock(key_n(1));
    got_same = l.ok();
  });
  std::thread other([&] {
    auto l = c->lock(key_n(2));
    got_other = l.ok();
  });
  other.join();
  EXPECT_TRUE(got_other);  // another key does not wait
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(got_same);  // the same key waits for the holder
  held->reset();
  same.join();
  EXPECT_TRUE(got_same);
  // prune() removes unlocked lock files; locking afterwards still works.
  auto rep = c->prune();
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->orphans, 2u);
  EXPECT_TRUE(fs::is_empty(tmp.file("cache") + "/locks"));
  EXPECT_TRUE(c->lock(key_n(1)).ok());
}

TEST(DiskEngineCache, KeyRecordsAndClear) {
  TempDir tmp;
  auto c = open_disk(tmp.file("cache"));
  EXPECT_FALSE(c->last_key("/models/a.onnx").has_value());
  CacheKeyInfo info{key_n(9), {{"config.shapes", "00ff"}, {"graph.nodes", "abcd"}}};
  c->record_key("/models/a.onnx", info);
  auto back = c->last_key("/models/a.onnx");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->key, info.key);
  EXPECT_EQ(back->components, info.components);
  EXPECT_FALSE(c->last_key("/models/b.onnx").has_value());
  ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
  ASSERT_TRUE(c->save(key_n(2), entry_n(2)).ok());
  auto rep = c->clear();
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->evicted, 2u);
  EXPECT_TRUE(c->list()->empty());
  EXPECT_FALSE(c->last_key("/models/a.onnx").has_value());
}

// The library takes the variables' values (the CLI reads the environment).
TEST(DiskEngineCache, DefaultDirectoryFollowsXdgThenHome) {
  EXPECT_EQ(default_cache_dir("/var/xdg", "/home/u").value(), "/var/xdg/streamrt/engines");
  EXPECT_EQ(default_cache_dir("relative/ignored", "/home/u").value(), "/home/u/.cache/streamrt/engines");
  EXPECT_EQ(default_cache_dir(nullptr, "/home/u").value(), "/home/u/.cache/streamrt/engines");
  EXPECT_EQ(default_cache_dir(nullptr, nullptr).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(default_cache_dir("", "relative").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace streamrt
