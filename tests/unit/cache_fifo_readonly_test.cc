// The disk cache never hangs on a FIFO (an entry file, a symlink to one, a record or lock file:
// each a miss with a warning, run in a forked child that alarm() kills if it hangs), and a cache
// that cannot be written (read-only, or a full disk while it is made) still builds and compiles,
// without caching, and lists what it holds. Read-only is made two ways: the fault hook failing
// every write step (as a read-only file system would; permission bits do not stop root, who runs
// the tests in CI), and real permissions in a child that drops root to `nobody`.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "cache/fault_injection.h"
#include "cache/file_util.h"
#include "cache/sha256.h"
#include "cache_ownership_util.h"
#include "cache_test_util.h"
#include "delegate_test_util.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::GemmModel;
using testing::run_guarded;
using testing::snapshot_tree;
using testing::TempDir;

bool is_fifo(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

TEST(CacheFifo, ReadFileOfAFifoOrASymlinkFailsAtOnce) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo"), link = tmp.file("link");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_symlink(fifo, link);
  const int code = run_guarded([&] {
    auto a = cache::read_file(fifo, 1000), b = cache::read_file(link, 1000);
    if (a.ok() || a.status().message().find("a FIFO") == std::string::npos) return 1;
    if (b.ok() || b.status().message().find("symbolic link") == std::string::npos) return 2;
    return 0;
  });
  EXPECT_EQ(code, 0) << (code == -SIGALRM ? "read_file hung on a FIFO" : "wrong result");
}

// One cached model: `dir` holds its entry (key) and record; `fifo` is a FIFO outside the cache.
struct CachedModel {
  TempDir tmp;
  GemmModel m;
  std::string model = tmp.file("m.onnx"), dir = tmp.file("cache"), fifo = tmp.file("fifo");
  CacheKey key;
  CachedModel() {
    m.write(model);
    auto c = DiskEngineCache::open(dir, 1ull << 40);
    CachedBuildInfo info;
    EXPECT_TRUE(build_plan_cached(model, testing::batch_config(m.in), **c, &info).ok());
    EXPECT_TRUE(info.saved);
    key = info.key;
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  }
  std::string entry(const std::string& file) const { return dir + "/entries/" + key.hex() + "/" + file; }
  // Builds, lists, prunes and clears in a child guarded against hangs; 0 when all worked.
  int use_guarded() {
    return run_guarded([&] {
      auto c = DiskEngineCache::open(dir, 1ull << 40);
      if (!c.ok()) return 1;
      CachedBuildInfo info;
      auto plan = build_plan_cached(model, testing::batch_config(m.in), **c, &info);
      if (!plan.ok()) return 2;
      const std::vector<float> x = testing::ramp(2 * m.in), want = m.reference(x, 2);
      const std::vector<float> y = testing::run_plan(*plan, x, 2, m.in, m.out);
      for (size_t i = 0; i < want.size(); ++i)
        if (y.size() != want.size() || std::fabs(y[i] - want[i]) > 1e-5f) return 3;
      if (!(*c)->list().ok()) return 4;
      if (!(*c)->prune().ok()) return 5;
      if (!(*c)->clear().ok()) return 6;
      return 0;
    });
  }
};

TEST(CacheFifo, AFifoInAnEntryIsAMissNotAHang) {
  for (const char* file : {"plan", "meta.json", "last_use"}) {
    CachedModel c;
    fs::remove(c.entry(file));
    ASSERT_EQ(::mkfifo(c.entry(file).c_str(), 0644), 0);
    const int code = c.use_guarded();
    EXPECT_EQ(code, 0) << file << (code == -SIGALRM ? ": hung" : ": failed");
    EXPECT_TRUE(is_fifo(c.entry(file))) << file << ": a FIFO streamrt did not make was removed";
  }
}

TEST(CacheFifo, ASymlinkToAFifoInAnEntryIsAMissNotAHang) {
  for (const char* file : {"plan", "meta.json"}) {
    CachedModel c;
    fs::remove(c.entry(file));
    fs::create_symlink(c.fifo, c.entry(file));
    const int code = c.use_guarded();
    EXPECT_EQ(code, 0) << file << (code == -SIGALRM ? ": hung" : ": failed");
    EXPECT_TRUE(fs::is_symlink(c.entry(file)));
    EXPECT_TRUE(is_fifo(c.fifo));
  }
}

TEST(CacheFifo, AFifoAsARecordOrLockFileIsNotAHang) {
  CachedModel c;
  // The model's record (read for miss explanations, written after a build), the key's build
  // lock, and a staging lock in tmp/: all FIFOs; without the entry, the build locks and saves.
  const std::string record = c.dir + "/models/" + cache::sha256_hex(c.model) + ".json";
  const std::string lock = c.dir + "/locks/" + c.key.hex() + ".lock";
  const std::string stage_lock =
      c.dir + "/tmp/stage-" + c.key.hex() + "-" + std::to_string(testing::dead_pid()) + "-0.lock";
  ASSERT_TRUE((*DiskEngineCache::open(c.dir, 1ull << 40))->remove(c.key).ok());
  fs::remove(record);
  fs::remove(lock);  // (left by the first build)
  for (const std::string& f : {record, lock, stage_lock}) ASSERT_EQ(::mkfifo(f.c_str(), 0644), 0) << f;
  const int code = c.use_guarded();
  EXPECT_EQ(code, 0) << (code == -SIGALRM ? "hung" : "failed");
  for (const std::string& f : {record, lock, stage_lock}) EXPECT_TRUE(is_fifo(f)) << f;
}

Status read_only_fs(const std::string&) { return io_error("Read-only file system (injected)"); }

// Fails every write step of the cache while it lives.
struct ReadOnlyHook {
  ReadOnlyHook() { cache::testing::set_fault_hook(read_only_fs); }
  ~ReadOnlyHook() { cache::testing::set_fault_hook(nullptr); }
};

TEST(CacheReadOnly, AReadOnlyCacheBuildsListsAndIsNotChanged) {
  CachedModel cached;
  GemmModel other;
  other.in = 5;  // another architecture: a miss
  const std::string other_path = cached.tmp.file("other.onnx");
  other.write(other_path);
  const auto before = snapshot_tree(cached.dir);
  ReadOnlyHook hook;
  auto c = DiskEngineCache::open(cached.dir, 1ull << 40);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_NE((*c)->read_only_reason().find("Read-only file system"), std::string::npos) << (*c)->read_only_reason();
  CachedBuildInfo info;
  ASSERT_TRUE(build_plan_cached(cached.model, testing::batch_config(cached.m.in), **c, &info).ok());
  EXPECT_TRUE(info.hit);  // its entries are still used
  auto plan = build_plan_cached(other_path, testing::batch_config(other.in), **c, &info);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(info.hit);
  EXPECT_FALSE(info.saved);
  EXPECT_NE(info.save_error.find("cannot be written"), std::string::npos) << info.save_error;
  const std::vector<float> x = testing::ramp(2 * other.in);
  testing::expect_near(testing::run_plan(*plan, x, 2, other.in, other.out), other.reference(x, 2));
  auto listed = (*c)->list();
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  EXPECT_EQ(listed->size(), 1u);
  EXPECT_EQ((*c)->prune().status().code(), StatusCode::kIoError);
  EXPECT_EQ((*c)->clear().status().code(), StatusCode::kIoError);
  EXPECT_EQ(snapshot_tree(cached.dir), before);
}

TEST(CacheReadOnly, ACacheThatCannotBeMadeStillBuilds) {
  TempDir tmp;
  GemmModel m;
  m.write(tmp.file("m.onnx"));
  for (const char* step : {"mkdir", "marker"}) {
    const std::string dir = tmp.file(std::string("cache_") + step);
    // A read-only parent (mkdir fails), or a disk that is full once the directory exists.
    cache::testing::set_fault_hook([&](const std::string& s) {
      return s == step ? io_error("No space left on device (injected)") : ok_status();
    });
    auto c = DiskEngineCache::open(dir, 1ull << 40);
    ASSERT_TRUE(c.ok()) << step << ": " << c.status().to_string();
    CachedBuildInfo info;
    auto plan = build_plan_cached(tmp.file("m.onnx"), testing::batch_config(m.in), **c, &info);
    cache::testing::set_fault_hook(nullptr);
    ASSERT_TRUE(plan.ok()) << step << ": " << plan.status().to_string();
    EXPECT_FALSE(info.saved) << step;
    EXPECT_NE(info.save_error.find("No space left"), std::string::npos) << step << ": " << info.save_error;
    EXPECT_TRUE(!fs::exists(dir) || fs::is_empty(dir)) << step;
  }
}

TEST(CacheReadOnly, CompileThroughAReadOnlyCacheCompilesTheSameProgram) {
  TempDir tmp;
  const std::string model = testing::write_graph_break_model(tmp.path().string());
  ASSERT_TRUE(DiskEngineCache::open(tmp.file("cache"), 1ull << 40).ok());
  delegate::CompileOptions o;
  o.builder.device = DeviceType::kCpu;
  o.fallback_ops = {"Softmax"};
  auto plain = delegate::compile_onnx(model, o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  ReadOnlyHook hook;
  auto c = DiskEngineCache::open(tmp.file("cache"), 1ull << 40);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  o.cache = c->get();
  auto cached = delegate::compile_onnx(model, o);
  ASSERT_TRUE(cached.ok()) << cached.status().to_string();
  ASSERT_EQ(cached->report.engines.size(), 2u);
  for (const auto& e : cached->report.engines) {
    ASSERT_TRUE(e.cache.has_value());
    EXPECT_FALSE(e.cache->saved);
    EXPECT_NE(e.cache->save_error.find("cannot be written"), std::string::npos) << e.cache->save_error;
  }
  EXPECT_EQ(cached->segments, plain->segments);
  EXPECT_TRUE((*c)->list()->empty());
}

constexpr fs::perms kAllWrite = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;

// Real permissions: the cache made writable by no one, used by `nobody` (root drops to it in
// the child; another user runs it as itself).
TEST(CacheReadOnly, ACacheTheUserCannotWriteBuildsAndLists) {
  CachedModel cached;
  GemmModel other;
  other.in = 5;
  const std::string other_path = cached.tmp.file("other.onnx");
  other.write(other_path);
  fs::permissions(cached.tmp.path(), fs::perms::all & ~(fs::perms::group_write | fs::perms::others_write));
  for (auto& p : fs::recursive_directory_iterator(cached.dir))
    if (!p.is_symlink()) fs::permissions(p.path(), kAllWrite, fs::perm_options::remove);
  fs::permissions(cached.dir, kAllWrite, fs::perm_options::remove);
  const auto before = snapshot_tree(cached.dir);
  const int code = run_guarded([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 77;
    auto c = DiskEngineCache::open(cached.dir, 1ull << 40);
    if (!c.ok() || (*c)->read_only_reason().empty()) return 2;
    CachedBuildInfo info;
    if (!build_plan_cached(cached.model, testing::batch_config(cached.m.in), **c, &info).ok() || !info.hit) return 3;
    if (!build_plan_cached(other_path, testing::batch_config(other.in), **c, &info).ok() || info.saved) return 4;
    auto listed = (*c)->list();
    return listed.ok() && listed->size() == 1 ? 0 : 5;
  });
  const auto after = snapshot_tree(cached.dir);
  fs::permissions(cached.dir, fs::perms::owner_write, fs::perm_options::add);
  for (auto& p : fs::recursive_directory_iterator(cached.dir))
    if (!p.is_symlink()) fs::permissions(p.path(), fs::perms::owner_write, fs::perm_options::add);
  if (code == 77) GTEST_SKIP() << "cannot drop root privileges here";
  EXPECT_EQ(code, 0) << "step that failed (see the test's return codes)";
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace streamrt
