// Safe file opening and atomic writes (src/core/file_io.cc) and their users: nothing that is
// not a regular file is read (no hang on a FIFO, no endless read of /dev/zero) or replaced (a
// symlink, FIFO, device or directory named as an output survives), write errors such as a
// full disk are reported, and temporaries never linger. Tests run as root: permission bits
// do not stop them, so each case uses the file's kind, not its mode.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <functional>
#include <thread>

#include "core/file_io.h"
#include "core/mapped_file.h"
#include "core/npy.h"
#include "onnx/importer.h"
#include "onnx/tensor_proto.h"
#include "onnx_model_util.h"
#include "plan/plan.h"

namespace streamrt {
namespace {

using testing::TempDir;
using testing::write_file;
namespace fs = std::filesystem;

::testing::AssertionResult fails_with(const Status& st, StatusCode code, const std::vector<std::string>& parts) {
  if (st.ok()) return ::testing::AssertionFailure() << "succeeded";
  if (st.code() != code) return ::testing::AssertionFailure() << "wrong code: " << st.to_string();
  for (const auto& p : parts)
    if (st.message().find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "'" << p << "' not in: " << st.to_string();
  return ::testing::AssertionSuccess() << st.to_string();
}
template <typename T>
::testing::AssertionResult fails_with(const Result<T>& r, StatusCode code, const std::vector<std::string>& parts) {
  if (r.ok()) return ::testing::AssertionFailure() << "succeeded";
  return fails_with(r.status(), code, parts);
}

// Runs `fn` in a child process and reports whether it returned true within `seconds` (a hang
// on a FIFO must fail the test, not stall the suite: the child is killed).
bool in_child_within(int seconds, const std::function<bool()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(fn() ? 0 : 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ADD_FAILURE() << "still running after " << seconds << " s (blocked?)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string read_text(const fs::path& p) {
  auto r = read_whole_file(p.string(), 1 << 20);
  return r.ok() ? *r : "<" + r.status().to_string() + ">";
}

// Names in `dir` that hold "streamrt-tmp".
std::vector<std::string> temps_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("streamrt-tmp") != std::string::npos) out.push_back(e.path().string());
  return out;
}

// A pid that no longer exists: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  void TearDown() override { file_io_testing::set_fault_hook(nullptr); }
  std::string path(const std::string& name) const { return dir_.file(name); }
  TempDir dir_;
};

// ---- reading -----------------------------------------------------------------------------

TEST_F(FileIo, ReadsRegularFilesAndChecksTheSizeFirst) {
  write_file(path("a.bin"), "0123456789");
  auto f = InputFile::open(path("a.bin"), 10);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->size(), 10u);
  EXPECT_EQ(*f->read_all(), "0123456789");
  char buf[4];
  ASSERT_TRUE(f->read_at(buf, 4, 6).ok());
  EXPECT_EQ(std::string(buf, 4), "6789");
  // Reading past the end is an error naming the file, not a short result.
  EXPECT_TRUE(fails_with(f->read_at(buf, 4, 8), StatusCode::kIoError, {"a.bin", "short"}));
  EXPECT_TRUE(fails_with(InputFile::open(path("a.bin"), 9), StatusCode::kInvalidArgument,
                         {"a.bin", "10 bytes", "9 allowed"}));
  EXPECT_TRUE(fails_with(InputFile::open(path("a.bin"), {9, true}, StatusCode::kInvalidPlan),
                         StatusCode::kInvalidPlan, {"10 bytes"}));
  EXPECT_TRUE(fails_with(InputFile::open(path("missing"), 9), StatusCode::kIoError, {"missing", "No such file"}));
}

TEST_F(FileIo, RefusesToReadWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
  fs::create_directory(path("dir"));
  fs::create_symlink(path("fifo"), path("link_to_fifo"));
  const std::string fifo = path("fifo"), dir = path("dir"), link = path("link_to_fifo");
  // In a child: a blocking open of a FIFO without a writer never returns.
  EXPECT_TRUE(in_child_within(20, [&] {
    return fails_with(InputFile::open(fifo, 100), StatusCode::kIoError, {"fifo'", "is a FIFO"}) &&
           fails_with(InputFile::open(link, 100), StatusCode::kIoError, {"is a FIFO"}) &&
           !MappedFile::open(fifo).ok() && !load_npy(fifo).ok() && !onnx_import::import_onnx_file(fifo).ok();
  }));
  EXPECT_TRUE(fails_with(InputFile::open(dir, 100), StatusCode::kIoError, {"dir'", "is a directory"}));
  EXPECT_TRUE(fails_with(MappedFile::open(dir), StatusCode::kIoError, {"is a directory"}));
  // Devices are refused before a byte is read: /dev/zero would never end.
  EXPECT_TRUE(in_child_within(20, [] {
    return fails_with(InputFile::open("/dev/zero", UINT64_MAX), StatusCode::kIoError,
                      {"/dev/zero", "is a character device"}) &&
           fails_with(load_npy("/dev/zero"), StatusCode::kIoError, {"character device"}) &&
           fails_with(onnx_import::load_tensor_pb("/dev/zero"), StatusCode::kIoError, {"character device"}) &&
           fails_with(onnx_import::import_onnx_file("/dev/zero"), StatusCode::kIoError,
                      {"cannot open ONNX model '/dev/zero'", "character device"}) &&
           fails_with(plan::read_plan("/dev/zero"), StatusCode::kIoError, {"character device"});
  }));
  // A link to a regular file is read unless links are refused.
  write_file(path("real"), "x");
  fs::create_symlink(path("real"), path("link"));
  EXPECT_TRUE(InputFile::open(path("link"), 1).ok());
  EXPECT_TRUE(fails_with(InputFile::open(path("link"), {1, false}), StatusCode::kIoError, {"symbolic link"}));
}

TEST_F(FileIo, NpyInputsAreSizeCheckedBeforeTheyAreRead) {
  Tensor t = *Tensor::allocate(DataType::kFloat32, {4, 4});
  ASSERT_TRUE(save_npy(t, path("t.npy")).ok());
  EXPECT_TRUE(load_npy(path("t.npy")).ok());
  EXPECT_TRUE(fails_with(load_npy(path("t.npy"), 100), StatusCode::kInvalidArgument, {"t.npy", "100 allowed"}));
}

// ---- atomic writes -----------------------------------------------------------------------

TEST_F(FileIo, WritesAndReplacesRegularFilesLeavingNoTemporary) {
  ASSERT_TRUE(write_file_atomic(path("out"), "first", 5).ok());
  EXPECT_EQ(read_text(path("out")), "first");
  ASSERT_TRUE(write_file_atomic(path("out"), [](const WriteSink& sink) {
                Status st = sink("sec", 3);
                return st.ok() ? sink("ond", 3) : st;
              }).ok());
  EXPECT_EQ(read_text(path("out")), "second");
  EXPECT_TRUE(temps_in(dir_.path()).empty());
  // A failing producer: the target keeps its old bytes, the temporary is gone.
  Status st = write_file_atomic(path("out"), [](const WriteSink& sink) {
    Status s = sink("partial", 7);
    return s.ok() ? internal_error("producer failed") : s;
  });
  EXPECT_TRUE(fails_with(st, StatusCode::kInternal, {"producer failed"}));
  EXPECT_EQ(read_text(path("out")), "second");
  EXPECT_TRUE(temps_in(dir_.path()).empty());
  EXPECT_TRUE(fails_with(write_file_atomic(path("no_dir/out"), "x", 1), StatusCode::kIoError,
                         {"no_dir/out", "No such file"}));
}

TEST_F(FileIo, RefusesToReplaceSymlinksFifosDevicesAndDirectories) {
  write_file(path("target"), "keep me");
  fs::create_symlink(path("target"), path("link"));
  EXPECT_TRUE(fails_with(write_file_atomic(path("link"), "new", 3), StatusCode::kIoError,
                         {"link'", "a symbolic link", "not a regular file"}));
  EXPECT_TRUE(fs::is_symlink(path("link")));
  EXPECT_EQ(read_text(path("target")), "keep me");

  fs::create_directory(path("dir"));
  EXPECT_TRUE(fails_with(write_file_atomic(path("dir"), "new", 3), StatusCode::kIoError, {"a directory"}));
  EXPECT_TRUE(fs::is_directory(path("dir")));

  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
  const std::string fifo = path("fifo");
  EXPECT_TRUE(in_child_within(20, [&] {
    return fails_with(write_file_atomic(fifo, "new", 3), StatusCode::kIoError, {"a FIFO"});
  }));
  EXPECT_TRUE(fs::is_fifo(fifo));

  // Character devices of our own with /dev/null's and /dev/full's numbers (never the real
  // ones: a regression would replace them on the test machine): neither is replaced, and the
  // full one is not taken for a file that was written.
  for (auto [name, minor] : {std::pair{"null", 3}, std::pair{"full", 7}}) {
    SCOPED_TRACE(name);
    ASSERT_EQ(::mknod(path(name).c_str(), S_IFCHR | 0666, makedev(1, minor)), 0) << "tests run as root";
    EXPECT_TRUE(fails_with(write_file_atomic(path(name), "new", 3), StatusCode::kIoError,
                           {name, "a character device"}));
    EXPECT_TRUE(fs::is_character_file(path(name)));
  }
  EXPECT_TRUE(temps_in(dir_.path()).empty());
}

TEST_F(FileIo, RemovesStaleTemporariesOfDeadProcessesOnly) {
  const std::string out = path("model.plan");
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getppid());
  const std::string stale = out + ".streamrt-tmp." + dead + ".0", legacy = out + ".tmp." + dead,
                    alive = out + ".streamrt-tmp." + live + ".3", odd = out + ".streamrt-tmp.notapid.0",
                    other = path("other.plan.streamrt-tmp." + dead + ".0");
  for (const auto& f : {stale, legacy, alive, odd, other}) write_file(f, "junk");
  ASSERT_TRUE(write_file_atomic(out, "plan", 4).ok());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(legacy));  // what earlier versions left ("<output>.tmp.<pid>")
  EXPECT_TRUE(fs::exists(alive));    // a live process may still be writing it
  EXPECT_TRUE(fs::exists(odd));
  EXPECT_TRUE(fs::exists(other));    // another output's temporaries are its own business
  EXPECT_EQ(read_text(out), "plan");
  // A stale name that is not a regular file is left alone.
  fs::remove(alive);
  fs::create_directory(stale);
  EXPECT_EQ(remove_stale_temps(out), 0);
  EXPECT_TRUE(fs::is_directory(stale));
}

TEST_F(FileIo, ReportsEveryFailedStepAndCleansUp) {
  write_file(path("out"), "old");
  for (const char* step : {"write", "fsync", "rename"}) {
    SCOPED_TRACE(step);
    file_io_testing::set_fault_hook([step](const std::string& s) {
      return s == step ? io_error("No space left on device") : ok_status();
    });
    EXPECT_TRUE(fails_with(write_file_atomic(path("out"), "new bytes", 9), StatusCode::kIoError,
                           {"out.streamrt-tmp.", "No space left on device"}));
    EXPECT_EQ(read_text(path("out")), "old");
    EXPECT_TRUE(temps_in(dir_.path()).empty());
  }
}

// A real full disk: a 64 KiB tmpfs (root can mount one here; skipped where it cannot).
TEST_F(FileIo, ReportsAFullDisk) {
  const std::string mnt = path("tiny");
  fs::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) GTEST_SKIP() << "cannot mount a tmpfs here";
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  ASSERT_TRUE(write_file_atomic(mnt + "/out", "old", 3).ok());
  const std::string big(1 << 20, 'x');
  EXPECT_TRUE(fails_with(write_file_atomic(mnt + "/out", big.data(), big.size()), StatusCode::kIoError,
                         {"out.streamrt-tmp.", "No space left on device"}));
  EXPECT_EQ(read_text(mnt + "/out"), "old");
  EXPECT_TRUE(temps_in(mnt).empty());
  Tensor t = *Tensor::allocate(DataType::kFloat32, {1 << 18});
  EXPECT_TRUE(fails_with(save_npy(t, mnt + "/t.npy"), StatusCode::kIoError, {"No space left on device"}));
  EXPECT_FALSE(fs::exists(mnt + "/t.npy"));
}

TEST_F(FileIo, MakeDirectories) {
  EXPECT_TRUE(make_directories(path("a/b/c")).ok());
  EXPECT_TRUE(make_directories(path("a/b/c")).ok());
  write_file(path("file"), "x");
  EXPECT_TRUE(fails_with(make_directories(path("file/sub")), StatusCode::kIoError, {"file/sub"}));
  EXPECT_TRUE(fails_with(make_directories(path("file")), StatusCode::kIoError,
                         {"cannot create directory '" + path("file") + "'"}));
}

// ---- ONNX external data: inside the model's folder, regular, never blocking ----------------

class FileIoExternalData : public FileIo {
 protected:
  void SetUp() override {
    FileIo::SetUp();
    fs::create_directory(model_dir_);
    write_file(path("outside.bin"), std::string(16, '\0'));
  }
  Result<Tensor> load(const std::string& location) {
    return onnx_import::tensor_from_proto(
        testing::external_tensor("w", onnx::TensorProto_DataType_FLOAT, {4}, location), model_dir_);
  }
  std::string model_dir_ = path("model");
};

TEST_F(FileIoExternalData, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((model_dir_ + "/w.bin").c_str(), 0644), 0);
  EXPECT_TRUE(in_child_within(20, [&] { return fails_with(load("w.bin"), StatusCode::kIoError, {"'w'", "FIFO"}); }));
  // Also through the whole model file, as `streamrt build` reads it.
  onnx::ModelProto m = testing::add_relu_model();
  *m.mutable_graph()->mutable_initializer(0) =
      testing::external_tensor("W", onnx::TensorProto_DataType_FLOAT, {1, 3}, "w.bin");
  write_file(model_dir_ + "/model.onnx", testing::serialize(m));
  const std::string model = model_dir_ + "/model.onnx";
  EXPECT_TRUE(in_child_within(20, [&] {
    return fails_with(onnx_import::import_onnx_file(model), StatusCode::kIoError, {"model.onnx", "FIFO"});
  }));
}

TEST_F(FileIoExternalData, StaysInsideTheModelFolder) {
  EXPECT_TRUE(fails_with(load(path("outside.bin")), StatusCode::kInvalidModel, {"absolute"}));
  EXPECT_TRUE(fails_with(load("../outside.bin"), StatusCode::kInvalidModel, {"'..'"}));
  fs::create_symlink(path("outside.bin"), model_dir_ + "/escape.bin");
  EXPECT_TRUE(fails_with(load("escape.bin"), StatusCode::kInvalidModel, {"outside the model's folder"}));
  write_file(model_dir_ + "/inside.bin", std::string(16, '\0'));
  EXPECT_TRUE(load("inside.bin").ok());
  EXPECT_TRUE(fails_with(load("/dev/zero"), StatusCode::kInvalidModel, {"absolute"}));
  // /dev/zero reached through a link inside the folder: outside, and never read.
  fs::create_symlink("/dev/zero", model_dir_ + "/zero.bin");
  EXPECT_TRUE(in_child_within(20, [&] { return !load("zero.bin").ok(); }));
}

}  // namespace
}  // namespace streamrt
