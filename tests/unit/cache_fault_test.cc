// Faults of the disk cache, with real processes: writers killed with SIGKILL at every step and
// at random moments, a full disk (injected, and a real small tmpfs where it can be mounted),
// several processes building one key at once.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "cache/cached_build.h"
#include "cache/entry.h"
#include "cache/fault_injection.h"
#include "cache_test_util.h"
#include "onnx/importer.h"
#include "streamrt/cache.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::GemmModel;
using testing::TempDir;

CacheKey key_n(uint8_t n) {
  CacheKey k;
  k.digest[0] = n;
  return k;
}

std::vector<uint8_t> plan_bytes(uint8_t n, size_t size) {
  std::vector<uint8_t> b(size);
  for (size_t i = 0; i < size; ++i) b[i] = static_cast<uint8_t>((i * 131) ^ n);
  return b;
}

CacheEntry entry_n(uint8_t n, size_t size) { return cache::make_entry(plan_bytes(n, size), key_n(n), plan::PlanData{}); }

// Runs `child` in a forked process; returns its wait status.
template <typename F>
int in_child(F child) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = child();
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// After any crash: each key loads as nothing or as exactly what was saved, never as a corrupt
// entry; the cache still stores and loads; prune leaves tmp/ empty.
void expect_cache_sound(const std::string& dir, const std::vector<uint8_t>& keys, size_t size) {
  auto c = DiskEngineCache::open(dir, 1ull << 40);
  ASSERT_TRUE(c.ok());
  for (uint8_t n : keys) {
    auto e = (*c)->load(key_n(n));
    if (e.ok()) EXPECT_EQ(e->plan, plan_bytes(n, size)) << "key " << int(n);
    else EXPECT_EQ(e.status().code(), StatusCode::kNotFound) << e.status().to_string();
  }
  ASSERT_TRUE((*c)->save(key_n(250), entry_n(250, 1000)).ok());
  EXPECT_EQ((*c)->load(key_n(250))->plan, plan_bytes(250, 1000));
  ASSERT_TRUE((*c)->prune().ok());
  EXPECT_TRUE(fs::is_empty(dir + "/tmp"));
  EXPECT_EQ((*c)->prune()->broken, 0u);
}

TEST(CacheFaults, WriterKilledAtEveryStepLeavesNoLoadableEntry) {
  constexpr size_t kSize = 300 * 1024;  // five 64 KiB write chunks
  TempDir tmp;
  // Count the steps of one save.
  int steps = 0;
  {
    auto c = DiskEngineCache::open(tmp.file("count"), 1ull << 40);
    cache::testing::set_fault_hook([&](const std::string&) {
      ++steps;
      return ok_status();
    });
    ASSERT_TRUE((*c)->save(key_n(1), entry_n(1, kSize)).ok());
  }
  cache::testing::set_fault_hook(nullptr);
  ASSERT_GE(steps, 10);
  for (int kill_at = 1; kill_at <= steps; ++kill_at) {
    const std::string dir = tmp.file(std::to_string(kill_at) + ".cache");
    ASSERT_TRUE(DiskEngineCache::open(dir, 1ull << 40).ok());
    int status = in_child([&] {
      int seen = 0;
      auto c = DiskEngineCache::open(dir, 1ull << 40);
      cache::testing::set_fault_hook([&](const std::string&) {
        if (++seen == kill_at) ::raise(SIGKILL);
        return ok_status();
      });
      return c.ok() && (*c)->save(key_n(1), entry_n(1, kSize)).ok() ? 0 : 1;
    });
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "kill at step " << kill_at;
    expect_cache_sound(dir, {1}, kSize);
  }
}

TEST(CacheFaults, WritersKilledAtRandomMomentsNeverBreakTheCache) {
  constexpr size_t kSize = 2 << 20;
  TempDir tmp;
  const std::string dir = tmp.file("cache");
  ASSERT_TRUE(DiskEngineCache::open(dir, 1ull << 40).ok());
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> delay_us(0, 40000);
  int killed_mid_save = 0;
  // Rounds until enough kills landed inside a save (how many do depends on the machine's speed
  // and load; a fixed count made the test flaky under the sanitizers).
  for (int round = 0; round < 300 && (round < 25 || killed_mid_save <= 5); ++round) {
    pid_t pid = ::fork();
    if (pid == 0) {
      // Saves (and replaces) entries until killed; evictions run too (3 entries fit).
      auto c = DiskEngineCache::open(dir, 3 * (kSize + 64 * 1024));
      for (uint8_t n = 0;; n = static_cast<uint8_t>((n + 1) % 5))
        if (!c.ok() || !(*c)->save(key_n(n), entry_n(n, kSize)).ok()) ::_exit(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed by itself in round " << round;
    if (!fs::is_empty(dir + "/tmp")) ++killed_mid_save;  // (load() leaves tmp/ alone)
    auto c = DiskEngineCache::open(dir, 1ull << 40);
    for (uint8_t n = 0; n < 5; ++n) {
      auto e = (*c)->load(key_n(n));
      if (e.ok()) EXPECT_EQ(e->plan, plan_bytes(n, kSize)) << "round " << round;
      else EXPECT_EQ(e.status().code(), StatusCode::kNotFound) << e.status().to_string();
    }
  }
  EXPECT_GT(killed_mid_save, 5) << "too few kills landed inside a save to test anything";
  expect_cache_sound(dir, {0, 1, 2, 3, 4}, kSize);
}

Status disk_full() { return io_error("No space left on device (injected)"); }

// A temporary file of a writer killed before renaming it (lk-, model-, tag-<pid>-<n>) is removed
// by the next prune once that process is gone; one of a live process stays.
TEST(CacheFaults, PruneRemovesTemporariesOfDeadWritersOnly) {
  TempDir tmp;
  const std::string dir = tmp.file("cache");
  ASSERT_TRUE(DiskEngineCache::open(dir, 1ull << 40).ok());
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);  // reaped: its pid names no process now
  const std::string gone = dir + "/tmp/lk-" + std::to_string(dead) + "-0";
  const std::string gone_model = dir + "/tmp/model-" + std::to_string(dead) + "-1";
  const std::string alive = dir + "/tmp/lk-" + std::to_string(::getpid()) + "-7";
  for (const auto& f : {gone, gone_model, alive}) std::ofstream(f) << "x";
  auto c = DiskEngineCache::open(dir, 1ull << 40);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->prune().ok());
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_FALSE(fs::exists(gone_model));
  EXPECT_TRUE(fs::exists(alive));
}

TEST(CacheFaults, FullDiskLeavesNoPartialEntry) {
  TempDir tmp;
  const std::string dir = tmp.file("cache");
  auto c = DiskEngineCache::open(dir, 1ull << 40);
  ASSERT_TRUE((*c)->save(key_n(1), entry_n(1, 1000)).ok());
  int writes = 0;
  cache::testing::set_fault_hook([&](const std::string& step) { return step == "write" && ++writes == 3 ? disk_full() : ok_status(); });
  Status st = (*c)->save(key_n(2), entry_n(2, 300 * 1024));
  cache::testing::set_fault_hook(nullptr);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("No space left"), std::string::npos) << st.message();
  EXPECT_FALSE((*c)->contains(key_n(2)));
  EXPECT_TRUE(fs::is_empty(dir + "/tmp"));
  EXPECT_EQ((*c)->load(key_n(1))->plan, plan_bytes(1, 1000));  // the other entry is intact
}

TEST(CacheFaults, BuildSucceedsWhenTheCacheCannotStore) {
  TempDir tmp;
  GemmModel m;
  m.write(tmp.file("m.onnx"));
  auto c = DiskEngineCache::open(tmp.file("cache"), 1ull << 40);
  cache::testing::set_fault_hook([](const std::string& step) { return step == "write" ? disk_full() : ok_status(); });
  CachedBuildInfo info;
  auto plan = build_plan_cached(tmp.file("m.onnx"), testing::batch_config(m.in), **c, &info);
  cache::testing::set_fault_hook(nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_FALSE(info.saved);
  EXPECT_NE(info.save_error.find("No space left"), std::string::npos) << info.save_error;
  EXPECT_TRUE((*c)->list()->empty());
  EXPECT_TRUE(fs::is_empty(tmp.file("cache") + "/tmp"));
  const std::vector<float> x = testing::ramp(2 * m.in);
  testing::expect_near(testing::run_plan(*plan, x, 2, m.in, m.out), m.reference(x, 2));
}

// A real full file system: a 64 KiB tmpfs in a private mount namespace of a child process
// (needs CAP_SYS_ADMIN; skipped without it).
TEST(CacheFaults, RealFullTmpfs) {
  TempDir tmp;
  GemmModel m;
  m.write(tmp.file("m.onnx"));
  const std::string mnt = tmp.file("mnt");
  fs::create_directories(mnt);
  int status = in_child([&]() -> int {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
      return 77;
    auto c = DiskEngineCache::open(mnt + "/cache", 1ull << 40);
    if (!c.ok()) return 2;
    // Fill the file system, then build: the entry cannot be stored, the build still works.
    std::vector<char> chunk(4096, 'x');
    FILE* f = std::fopen((mnt + "/filler").c_str(), "wb");
    while (f && std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size() && std::fflush(f) == 0) {
    }
    if (f) std::fclose(f);
    CachedBuildInfo info;
    auto plan = build_plan_cached(tmp.file("m.onnx"), testing::batch_config(m.in), **c, &info);
    if (!plan.ok()) return 3;
    if (info.saved || info.save_error.find("No space left on device") == std::string::npos) return 4;
    if (!(*c)->list()->empty() || !fs::is_empty(mnt + "/cache/tmp")) return 5;
    // Space again: the next build stores its entry.
    fs::remove(mnt + "/filler");
    plan = build_plan_cached(tmp.file("m.onnx"), testing::batch_config(m.in), **c, &info);
    if (!plan.ok() || !info.saved || (*c)->list()->size() != 1) return 6;
    return 0;
  });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << "cannot mount a tmpfs here";
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "step that failed (see the test's return codes)";
}

TEST(CacheFaults, ConcurrentBuildersOfOneKeyBuildOnce) {
  constexpr int kProcesses = 4;
  TempDir tmp;
  GemmModel m;
  m.write(tmp.file("m.onnx"));
  const std::string dir = tmp.file("cache");
  ASSERT_TRUE(DiskEngineCache::open(dir, 1ull << 40).ok());
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c;
      (void)::read(go[0], &c, 1);  // returns 0 when the parent closes its end: all start at once
      auto cache = DiskEngineCache::open(dir, 1ull << 40);
      auto g = onnx_import::import_onnx_file(tmp.file("m.onnx"));
      if (!cache.ok() || !g.ok()) ::_exit(1);
      CachedBuildInfo info;
      cache::CachedBuildHooks hooks;
      // Hold the key's lock a while so the others surely wait on it.
      hooks.after_build = [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
      auto plan = cache::build_plan_data_cached(std::move(g).value(), "m.onnx", tmp.file("m.onnx"),
                                                testing::batch_config(m.in), **cache, &info, nullptr, hooks);
      if (!plan.ok()) ::_exit(2);
      auto bytes = plan::serialize_plan(*plan);
      const std::vector<float> x = testing::ramp(3 * m.in);
      std::vector<float> y = testing::run_plan(*bytes, x, 3, m.in, m.out), want = m.reference(x, 3);
      for (size_t k = 0; k < want.size(); ++k)
        if (y.size() != want.size() || std::fabs(y[k] - want[k]) > 1e-5f) ::_exit(3);
      ::_exit(info.hit ? 10 : 20);
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  int built = 0, hits = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    int code = WEXITSTATUS(status);
    ASSERT_TRUE(code == 10 || code == 20) << "a builder failed with " << code;
    (code == 20 ? built : hits)++;
  }
  EXPECT_EQ(built, 1);
  EXPECT_EQ(hits, kProcesses - 1);
  auto c = DiskEngineCache::open(dir, 1ull << 40);
  EXPECT_EQ((*c)->list()->size(), 1u);
}

}  // namespace
}  // namespace streamrt
