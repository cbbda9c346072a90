// The disk cache owns only what it wrote: a folder that is not a cache is refused and left
// untouched; inside a cache, prune / clear / eviction / temp cleanup remove only streamrt's own
// names and never follow, remove or write through a symlink; earlier versions' caches are adopted.
#include <unistd.h>

#include <filesystem>

#include "cache/entry.h"
#include "cache/sha256.h"
#include "cache_ownership_util.h"
#include "cache_test_util.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::GemmModel;
using testing::snapshot_tree;
using testing::TempDir;

CacheKey key_n(uint8_t n) {
  CacheKey k;
  k.digest[0] = n;
  k.digest[31] = static_cast<uint8_t>(0x50 + n);
  return k;
}

CacheEntry entry_n(uint8_t n, size_t size = 5000) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + n);
  return cache::make_entry(std::move(bytes), key_n(n), plan::PlanData{});
}

std::unique_ptr<DiskEngineCache> open_ok(const std::string& dir, uint64_t max = 1ull << 40) {
  auto c = DiskEngineCache::open(dir, max);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

// A project folder: a model, and tmp/ and models/ with the user's files (one named like a
// streamrt temporary file of a dead process).
std::string make_project(const TempDir& tmp, GemmModel& m) {
  const std::string p = tmp.file("project");
  fs::create_directories(p + "/tmp");
  fs::create_directories(p + "/models");
  m.write(p + "/models/m.onnx");
  testing::write_file(p + "/tmp/scratch.txt", "user data");
  testing::write_file(p + "/tmp/lk-" + std::to_string(testing::dead_pid()) + "-0", "user data too");
  testing::write_file(p + "/README", "a project");
  return p;
}

TEST(CacheOwnership, AFolderThatIsNotACacheIsRefusedAndLeftByteForByte) {
  TempDir tmp;
  GemmModel m;
  const std::string project = make_project(tmp, m);
  const auto before = snapshot_tree(project);
  auto c = DiskEngineCache::open(project, 1ull << 40);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'" + project + "' is not a streamrt engine cache"), std::string::npos)
      << c.status().message();
  // Also after build (through the cache) and the CLI's prune / clear, which all open it first.
  EXPECT_FALSE(DiskEngineCache::open(project, 1).ok());
  EXPECT_EQ(snapshot_tree(project), before);
  // A folder that looks like a cache (streamrt's subfolders) but holds a user's file is refused too.
  fs::create_directories(project + "/entries");
  fs::create_directories(project + "/locks");
  fs::remove(project + "/README");
  fs::remove(project + "/tmp/scratch.txt");
  const auto looks_like = snapshot_tree(project);
  c = DiskEngineCache::open(project, 1ull << 40);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("models/m.onnx"), std::string::npos) << c.status().message();
  EXPECT_EQ(snapshot_tree(project), looks_like);
}

TEST(CacheOwnership, NewAndEmptyFoldersBecomeCachesWithAMarker) {
  TempDir tmp;
  ASSERT_TRUE(open_ok(tmp.file("new/deeper")));
  EXPECT_TRUE(fs::is_regular_file(tmp.file("new/deeper/STREAMRT_CACHE")));
  fs::create_directories(tmp.file("empty"));
  auto c = open_ok(tmp.file("empty"));
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->read_only_reason().empty()) << c->read_only_reason();
  EXPECT_TRUE(fs::is_regular_file(tmp.file("empty/STREAMRT_CACHE")));
  ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
  EXPECT_TRUE(open_ok(tmp.file("empty"))->contains(key_n(1)));  // reopened: it is a cache now
  // A file of another kind under the marker's name is not streamrt's marker.
  fs::create_directories(tmp.file("fake"));
  testing::write_file(tmp.file("fake/STREAMRT_CACHE"), "something else\n");
  EXPECT_EQ(DiskEngineCache::open(tmp.file("fake"), 100).status().code(), StatusCode::kInvalidArgument);
}

TEST(CacheOwnership, AnEarlierVersionsCacheIsAdoptedWhenItHoldsOnlyItsLayout) {
  TempDir tmp;
  const std::string dir = tmp.file("old");
  {
    auto c = open_ok(dir);
    ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
    c->record_key("/m.onnx", CacheKeyInfo{key_n(1), {{"graph.nodes", "ab"}}});
    ASSERT_TRUE(c->lock(key_n(1)).ok());
  }
  fs::remove(dir + "/STREAMRT_CACHE");  // as an earlier streamrt left it
  auto c = open_ok(dir);
  ASSERT_TRUE(c);
  EXPECT_TRUE(fs::is_regular_file(dir + "/STREAMRT_CACHE"));
  EXPECT_EQ(c->load(key_n(1))->plan, entry_n(1).plan);
  // Not adopted: a user's file anywhere in it, a symlink where a directory belongs, or no
  // streamrt CACHEDIR.TAG.
  fs::remove(dir + "/STREAMRT_CACHE");
  testing::write_file(dir + "/entries/" + key_n(1).hex() + "/notes.txt", "mine");
  auto refused = DiskEngineCache::open(dir, 1ull << 40);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("notes.txt"), std::string::npos) << refused.status().message();
  fs::remove(dir + "/entries/" + key_n(1).hex() + "/notes.txt");
  fs::remove(dir + "/CACHEDIR.TAG");
  EXPECT_EQ(DiskEngineCache::open(dir, 1ull << 40).status().code(), StatusCode::kInvalidArgument);
}

TEST(CacheOwnership, UserFilesInsideACacheSurvivePruneClearAndEviction) {
  TempDir tmp;
  const std::string dir = tmp.file("cache");
  auto c = open_ok(dir);
  ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
  ASSERT_TRUE(c->save(key_n(2), entry_n(2)).ok());
  const std::string kept_entry = dir + "/entries/" + key_n(1).hex();
  // The user's things, some named like streamrt's (of the wrong kind).
  const std::string dead = std::to_string(testing::dead_pid());
  testing::write_file(dir + "/tmp/notes.txt", "n");
  fs::create_directories(dir + "/tmp/lk-" + dead + "-0/inner");  // a directory where a file belongs
  testing::write_file(dir + "/tmp/lk-" + dead + "-0/inner/f", "f");
  fs::create_directories(dir + "/tmp/dead-" + key_n(9).hex() + "-" + dead + "-0");
  testing::write_file(dir + "/tmp/dead-" + key_n(9).hex() + "-" + dead + "-0/mine.txt", "m");
  testing::write_file(dir + "/models/m.onnx", "model");
  testing::write_file(dir + "/locks/README", "r");
  testing::write_file(dir + "/entries/README", "r");
  testing::write_file(kept_entry + "/extra.txt", "x");
  // The user's files (and directories) as they are now.
  auto users = [&] {
    std::map<std::string, std::string> out;
    for (auto& [path, what] : snapshot_tree(dir))
      if (path.find("notes") != std::string::npos || path.find("inner") != std::string::npos ||
          path.find("mine.txt") != std::string::npos || path.find("m.onnx") != std::string::npos ||
          path.find("README") != std::string::npos || path.find("extra.txt") != std::string::npos)
        out[path] = what;
    return out;
  };
  const auto before = users();
  ASSERT_EQ(before.size(), 8u);
  // Eviction (a limit below one entry's size on disk) evicts entry 2 but cannot evict entry 1.
  auto small = open_ok(dir, 6000);
  ASSERT_TRUE(small->save(key_n(3), entry_n(3)).ok());
  EXPECT_FALSE(small->contains(key_n(2)));
  EXPECT_TRUE(small->contains(key_n(1)));
  auto pruned = small->prune();
  ASSERT_TRUE(pruned.ok()) << pruned.status().to_string();
  EXPECT_GE(pruned->skipped, 6u);
  auto cleared = c->clear();
  ASSERT_TRUE(cleared.ok()) << cleared.status().to_string();
  EXPECT_GE(cleared->skipped, 6u);
  EXPECT_EQ(users(), before);
  EXPECT_TRUE(fs::exists(kept_entry + "/plan"));  // the entry holding a user's file stays whole
  EXPECT_FALSE(fs::exists(dir + "/entries/" + key_n(3).hex()));
  // Loading it is a miss (kInvalidState), not a removal.
  EXPECT_EQ(c->load(key_n(1)).status().code(), StatusCode::kInvalidState);
  EXPECT_EQ(users(), before);
}

TEST(CacheOwnership, SymlinksInsideTheCacheAreNeverFollowed) {
  TempDir tmp;
  const std::string dir = tmp.file("cache"), victim = tmp.file("victim");
  auto c = open_ok(dir);
  // Outside the cache: files named like an entry's and a record's.
  fs::create_directories(victim);
  for (const char* f : {"plan", "meta.json", "last_use", "file", "record.json", "lock"})
    testing::write_file(victim + "/" + f, std::string("victim ") + f);
  const auto before = snapshot_tree(victim);
  const std::string dead = std::to_string(testing::dead_pid());
  fs::create_directory_symlink(victim, dir + "/entries/" + key_n(1).hex());
  fs::create_directory_symlink(victim, dir + "/tmp/dead-" + key_n(2).hex() + "-" + dead + "-0");
  fs::create_directory_symlink(victim, dir + "/tmp/stage-" + key_n(2).hex() + "-" + dead + "-1");
  fs::create_symlink(victim + "/file", dir + "/tmp/lk-" + dead + "-2");
  fs::create_symlink(victim + "/lock", dir + "/tmp/stage-" + key_n(2).hex() + "-" + dead + "-3.lock");
  fs::create_symlink(victim + "/lock", dir + "/locks/" + key_n(4).hex() + ".lock");
  const std::string model = tmp.file("m.onnx");
  fs::create_symlink(victim + "/record.json", dir + "/models/" + cache::sha256_hex(model) + ".json");
  // An entry whose files are symlinks (its directory is real).
  ASSERT_TRUE(c->save(key_n(3), entry_n(3)).ok());
  const std::string e3 = dir + "/entries/" + key_n(3).hex();
  for (const char* f : {"plan", "last_use"}) {
    fs::remove(e3 + "/" + f);
    fs::create_symlink(victim + "/" + f, e3 + "/" + f);
  }
  const auto links = snapshot_tree(dir);
  EXPECT_NE(c->load(key_n(3)).status().code(), StatusCode::kOk);  // no hit, no touch of last_use
  EXPECT_NE(c->load(key_n(1)).status().code(), StatusCode::kOk);
  EXPECT_FALSE(c->remove(key_n(3)).ok());
  c->record_key(model, CacheKeyInfo{key_n(5), {}});  // would write through the record's symlink
  EXPECT_FALSE(c->lock(key_n(4)).ok());
  ASSERT_TRUE(c->prune().ok());
  auto small = open_ok(dir, 6000);
  ASSERT_TRUE(small->save(key_n(6), entry_n(6)).ok());  // evicts what it can
  ASSERT_TRUE(c->clear().ok());
  EXPECT_EQ(snapshot_tree(victim), before);
  // The symlinks themselves are left too (reported, not removed).
  auto after = snapshot_tree(dir);
  for (const auto& [path, what] : links)
    if (what.find("-> ") != std::string::npos) {
      EXPECT_EQ(after[path], what) << path;
    }
}

TEST(CacheOwnership, ASymlinkedLayoutDirectoryIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("cache"), victim = tmp.file("victim");
  ASSERT_TRUE(open_ok(dir));
  fs::create_directories(victim + "/dead-" + key_n(1).hex() + "-1-0");
  testing::write_file(victim + "/dead-" + key_n(1).hex() + "-1-0/plan", "p");
  const auto before = snapshot_tree(victim);
  fs::remove(dir + "/tmp");
  fs::create_directory_symlink(victim, dir + "/tmp");
  auto c = DiskEngineCache::open(dir, 1ull << 40);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("'" + dir + "/tmp' is a symbolic link"), std::string::npos)
      << c.status().message();
  EXPECT_EQ(snapshot_tree(victim), before);
}

// The cache root itself may be a symlink (e.g. ~/.cache pointing to another disk).
TEST(CacheOwnership, ASymlinkedCacheRootIsUsed) {
  TempDir tmp;
  fs::create_directories(tmp.file("real"));
  fs::create_directory_symlink(tmp.file("real"), tmp.file("link"));
  auto c = open_ok(tmp.file("link"));
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->save(key_n(1), entry_n(1)).ok());
  EXPECT_TRUE(fs::exists(tmp.file("real/entries/" + key_n(1).hex() + "/plan")));
  ASSERT_TRUE(c->clear().ok());
  EXPECT_FALSE(c->contains(key_n(1)));
}

}  // namespace
}  // namespace streamrt
