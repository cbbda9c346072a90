// The host runtime with a stub backend: registry, Module load / forward, load-time option
// plumbing, destroy exactly once per successful init, and every failure path of loading and
// executing a method.
#include <gtest/gtest.h>

#include <thread>

#include "program_test_util.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::f32_tensor;
using testing::floats_of;
using testing::sample_program;
using testing::stub_backend;
using testing::StubBackend;

class ProgramRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    stub_backend().reset();
    dir_ = fs::path(STREAMRT_BINARY_DIR) / "program_runtime_test";
    fs::create_directories(dir_);
  }
  void TearDown() override { stub_backend().reset(); }

  std::string write(const std::string& name, std::vector<uint8_t> bytes) {
    const std::string path = (dir_ / name).string();
    testing::write_bytes(path, bytes);
    return path;
  }
  std::string write_sample(const std::string& name, int scale = 3) {
    return write(name, sample_program("StubBackend", scale).bytes());
  }

  // Every handle a successful init returned was destroyed exactly once.
  void expect_each_destroyed_once() {
    EXPECT_TRUE(stub_backend().live().empty());
    for (const auto& [h, n] : stub_backend().destroyed()) EXPECT_EQ(n, 1) << "handle " << h;
  }

  fs::path dir_;
};

const std::vector<float> kX = {1, 2, 3, 4, 5, 6};

// (x + c) * scale, computed here by hand.
std::vector<float> expected(int scale) {
  std::vector<float> y;
  for (size_t i = 0; i < kX.size(); ++i) y.push_back((kX[i] + testing::kSampleConstant[i]) * static_cast<float>(scale));
  return y;
}

TEST(BackendRegistry, RegisterFindAndRejectDuplicates) {
  stub_backend();  // registered once
  static StubBackend other;
  EXPECT_EQ(get_backend("StubBackend"), &stub_backend());
  EXPECT_EQ(get_backend("NoSuchBackend"), nullptr);
  Status dup = register_backend("StubBackend", &other);
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.message().find("'StubBackend' is already registered"), std::string::npos) << dup.to_string();
  EXPECT_EQ(get_backend("StubBackend"), &stub_backend());  // the first one stays
  EXPECT_EQ(register_backend("", &other).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(register_backend("NullBackend", nullptr).code(), StatusCode::kInvalidArgument);
  auto names = registered_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "StubBackend"), names.end());
  EXPECT_TRUE(backend_registry_errors().empty());
}

TEST(BackendRegistry, StaticRegistrationOfADuplicateIsRecorded) {
  static StubBackend a, b;
  BackendRegistrar first("StaticDupBackend", &a);
  auto before = backend_registry_errors().size();
  BackendRegistrar second("StaticDupBackend", &b);
  auto errors = backend_registry_errors();
  ASSERT_EQ(errors.size(), before + 1);
  EXPECT_NE(errors.back().find("'StaticDupBackend' is already registered"), std::string::npos);
  EXPECT_EQ(get_backend("StaticDupBackend"), &a);
}

TEST_F(ProgramRuntime, ForwardRunsKernelAndDelegate) {
  Module m(write_sample("sample.pte"));
  EXPECT_FALSE(m.is_loaded());
  ASSERT_TRUE(m.load().ok());
  EXPECT_TRUE(m.is_loaded());
  EXPECT_EQ(m.method_names(), std::vector<std::string>{"forward"});
  auto out = m.forward({f32_tensor({2, 3}, kX)});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(floats_of((*out)[0]), expected(3));
  EXPECT_EQ(stub_backend().inits(), 1);
}

TEST_F(ProgramRuntime, ConcurrentForwardCalls) {
  Module m(write_sample("concurrent.pte", 5));
  ASSERT_TRUE(m.load().ok());
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        auto out = m.forward({f32_tensor({2, 3}, kX)});
        if (out.ok() && floats_of((*out)[0]) == expected(5)) ++good;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 100);
}

TEST_F(ProgramRuntime, RuntimeSpecsReachInitWithTheirTypes) {
  BackendOptions stub;
  stub.set_option("budget", "8GiB").set_option("count", 3).set_option("flag", true);
  stub.set_option("count", int64_t{4});  // replaces
  BackendOptions other;
  other.set_option("budget", "1GiB");
  LoadBackendOptionsMap options;
  ASSERT_TRUE(options.set_options("StubBackend", stub).ok());
  ASSERT_TRUE(options.set_options("OtherBackend", other).ok());
  EXPECT_EQ(options.set_options("", stub).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(options.size(), 2u);

  std::vector<Status> seen;
  stub_backend().observe_init = [&](BackendInitContext& ctx) {
    EXPECT_EQ(ctx.backend_name(), "StubBackend");
    EXPECT_EQ(ctx.method_name(), "forward");
    EXPECT_EQ(ctx.get_runtime_spec<std::string>("budget").value(), "8GiB");  // not OtherBackend's
    EXPECT_EQ(ctx.get_runtime_spec<int64_t>("count").value(), 4);
    EXPECT_TRUE(ctx.get_runtime_spec<bool>("flag").value());
    EXPECT_EQ(ctx.runtime_specs().size(), 3u);
    seen.push_back(ctx.get_runtime_spec<std::string>("missing").status());
    seen.push_back(ctx.get_runtime_spec<int64_t>("budget").status());
    seen.push_back(ctx.get_runtime_spec<std::string>("flag").status());
  };
  Module m(write_sample("specs.pte"));
  ASSERT_TRUE(m.load(options).ok());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].code(), StatusCode::kNotFound);
  EXPECT_NE(seen[0].message().find("'missing'"), std::string::npos) << seen[0].to_string();
  EXPECT_EQ(seen[1].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(seen[1].message().find("'budget' is a string, expected a int"), std::string::npos) << seen[1].to_string();
  EXPECT_EQ(seen[2].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(seen[2].message().find("'flag' is a bool, expected a string"), std::string::npos) << seen[2].to_string();
  // The module keeps a copy of the options.
  ASSERT_NE(m.backend_options().get("StubBackend"), nullptr);
  EXPECT_EQ(std::get<std::string>(m.backend_options().get("StubBackend")->find("budget")->value), "8GiB");
}

TEST_F(ProgramRuntime, NoOptionsMeansNotFound) {
  Status st;
  stub_backend().observe_init = [&](BackendInitContext& ctx) {
    st = ctx.get_runtime_spec<std::string>("budget").status();
    EXPECT_TRUE(ctx.runtime_specs().empty());
  };
  Module m(write_sample("nooptions.pte"));
  ASSERT_TRUE(m.load().ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
}

TEST_F(ProgramRuntime, LoadIdIsSharedWithinALoadAndDiffersAcrossLoads) {
  // Two delegates of one method share a load id; a second load gets another.
  auto p = sample_program();
  auto& m = p.data.methods[0];
  m.delegates.push_back(m.delegates[0]);
  m.values.push_back(m.values[3]);
  m.values.back().name = "y2";
  program::Instruction call2;
  call2.kind = program::Instruction::Kind::kDelegateCall;
  call2.delegate = {1, {3}, {static_cast<int32_t>(m.values.size() - 1)}};
  m.instructions.push_back(call2);
  m.outputs = {static_cast<int32_t>(m.values.size() - 1)};
  std::vector<uint64_t> ids;
  stub_backend().observe_init = [&](BackendInitContext& ctx) { ids.push_back(ctx.load_id()); };
  Module mod(write("two_delegates.pte", p.bytes()));
  ASSERT_TRUE(mod.load().ok());
  ASSERT_TRUE(mod.load().ok());
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_EQ(ids[2], ids[3]);
  EXPECT_NE(ids[0], ids[2]);
  auto out = mod.forward({f32_tensor({2, 3}, kX)});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<float> want = expected(9);  // scaled twice by 3
  EXPECT_EQ(floats_of((*out)[0]), want);
}

TEST_F(ProgramRuntime, DestroyExactlyOncePerSuccessfulInit) {
  {
    Module m(write_sample("destroy.pte"));
    ASSERT_TRUE(m.load().ok());
    ASSERT_TRUE(m.load().ok());  // reload: the first handle is destroyed, a new one inited
    EXPECT_EQ(stub_backend().inits(), 2);
    EXPECT_EQ(stub_backend().destroyed().size(), 1u);
  }
  EXPECT_EQ(stub_backend().destroyed().size(), 2u);
  expect_each_destroyed_once();
}

TEST_F(ProgramRuntime, FailedInitDestroysOnlyTheDelegatesInitedBefore) {
  auto p = sample_program();
  auto& m = p.data.methods[0];
  m.delegates.push_back(m.delegates[0]);  // a second delegate, never called
  int calls = 0;
  stub_backend().on_init = [&](BackendInitContext&, FreeableBuffer*, std::span<const CompileSpec>) -> Result<DelegateHandle*> {
    if (++calls == 2) return device_error("stub: the device fell over");
    return static_cast<DelegateHandle*>(&calls);
  };
  Module mod(write("fail_second.pte", p.bytes()));
  Status st = mod.load();
  EXPECT_EQ(st.code(), StatusCode::kDeviceError);
  EXPECT_NE(st.message().find("method 'forward' delegate 1 ('StubBackend'): stub: the device fell over"),
            std::string::npos)
      << st.to_string();
  EXPECT_FALSE(mod.is_loaded());
  EXPECT_EQ(stub_backend().inits(), 1);
  ASSERT_EQ(stub_backend().destroyed().size(), 1u);
  EXPECT_EQ(stub_backend().destroyed().begin()->first, static_cast<DelegateHandle*>(&calls));
  expect_each_destroyed_once();
}

TEST_F(ProgramRuntime, FailedLoadKeepsThePreviousOptions) {
  BackendOptions good;
  good.set_option("budget", "1GiB");
  LoadBackendOptionsMap first;
  ASSERT_TRUE(first.set_options("StubBackend", good).ok());
  Module m(write_sample("keep_options.pte"));
  ASSERT_TRUE(m.load(first).ok());

  BackendOptions bad;
  bad.set_option("budget", "nonsense");
  LoadBackendOptionsMap second;
  ASSERT_TRUE(second.set_options("StubBackend", bad).ok());
  stub_backend().on_init = [](BackendInitContext& ctx, FreeableBuffer*, std::span<const CompileSpec>) -> Result<DelegateHandle*> {
    return invalid_argument("stub: bad budget '" + ctx.get_runtime_spec<std::string>("budget").value() + "'");
  };
  Status st = m.load(second);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bad budget 'nonsense'"), std::string::npos);
  const BackendOptions* kept = m.backend_options().get("StubBackend");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(std::get<std::string>(kept->find("budget")->value), "1GiB");
  // Loading again with the kept options works.
  stub_backend().on_init = nullptr;
  LoadBackendOptionsMap again = m.backend_options();
  ASSERT_TRUE(m.load(again).ok());
  EXPECT_TRUE(m.forward({f32_tensor({2, 3}, kX)}).ok());
}

TEST_F(ProgramRuntime, MissingBackendIsNotFoundNamingIt) {
  Module m(write("missing_backend.pte", sample_program("NoSuchBackend").bytes()));
  Status st = m.load();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("no backend named 'NoSuchBackend' is registered"), std::string::npos) << st.to_string();
  EXPECT_EQ(m.forward({f32_tensor({2, 3}, kX)}).status().code(), StatusCode::kInvalidState);
}

TEST_F(ProgramRuntime, UnavailableBackendFailsToLoad) {
  stub_backend().available = false;
  Module m(write_sample("unavailable.pte"));
  Status st = m.load();
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("not available"), std::string::npos) << st.to_string();
  EXPECT_EQ(stub_backend().inits(), 0);
}

TEST_F(ProgramRuntime, MissingKernelIsNotFound) {
  auto p = sample_program();
  p.data.methods[0].instructions[0].kernel.op_type = "NoSuchOp";
  Module m(write("missing_kernel.pte", p.bytes()));
  Status st = m.load();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("no portable kernel for op 'NoSuchOp'"), std::string::npos) << st.to_string();
  EXPECT_EQ(stub_backend().inits(), 0);  // kernels are resolved before any delegate is inited
}

TEST_F(ProgramRuntime, MissingFileAndMissingMethod) {
  Module m((dir_ / "no_such.pte").string());
  EXPECT_EQ(m.load().code(), StatusCode::kIoError);
  auto prog = Program::load(write_sample("methods.pte"));
  ASSERT_TRUE(prog.ok());
  auto meth = (*prog)->load_method("backward");
  EXPECT_EQ(meth.status().code(), StatusCode::kNotFound);
  EXPECT_NE(meth.status().message().find("no method 'backward' (it has 'forward')"), std::string::npos);
  Module ok(write_sample("methods2.pte"));
  ASSERT_TRUE(ok.load().ok());
  EXPECT_EQ(ok.execute("backward", {}).status().code(), StatusCode::kNotFound);
}

TEST_F(ProgramRuntime, BadInputsAreInvalidArgument) {
  Module m(write_sample("inputs.pte"));
  ASSERT_TRUE(m.load().ok());
  auto count = m.forward({});
  EXPECT_EQ(count.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(count.status().message().find("takes 1 inputs, got 0"), std::string::npos);
  auto kind = m.forward({EValue(int64_t{3})});
  EXPECT_EQ(kind.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(kind.status().message().find("input 0 'x' is a int, expected a tensor"), std::string::npos)
      << kind.status().to_string();
  auto dims = m.forward({f32_tensor({3, 2}, kX)});
  EXPECT_EQ(dims.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dims.status().message().find("is float32 3x2, expected float32 2x3"), std::string::npos)
      << dims.status().to_string();
  auto dtype = m.forward({EValue(Tensor::from_vector<int32_t>(DataType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6}))});
  EXPECT_EQ(dtype.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ProgramRuntime, ExecuteFailuresCarryTheInstruction) {
  Module m(write_sample("exec_fail.pte"));
  ASSERT_TRUE(m.load().ok());
  stub_backend().on_execute = [](BackendExecutionContext& ctx, DelegateHandle*, std::span<EValue*>) {
    EXPECT_EQ(ctx.method_name(), "forward");
    return out_of_memory("stub: no room");
  };
  auto r = m.forward({f32_tensor({2, 3}, kX)});
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(r.status().message().find("method 'forward' instruction 1 (delegate 0) ('StubBackend'): stub: no room"),
            std::string::npos)
      << r.status().to_string();
  // An output of the wrong type is the program's fault, caught before anything reads it.
  stub_backend().on_execute = [](BackendExecutionContext&, DelegateHandle*, std::span<EValue*> args) {
    *args[1] = EValue(Tensor::from_vector<int64_t>(DataType::kInt64, {2, 3}, {1, 2, 3, 4, 5, 6}));
    return ok_status();
  };
  r = m.forward({f32_tensor({2, 3}, kX)});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidProgram);
  EXPECT_NE(r.status().message().find("'y' is int64 2x3, expected float32 ?x3"), std::string::npos)
      << r.status().to_string();
  // The delegate's output had no static dims, so it came unallocated.
  stub_backend().on_execute = [](BackendExecutionContext&, DelegateHandle*, std::span<EValue*> args) {
    EXPECT_TRUE(args[0]->is_tensor());
    EXPECT_TRUE(args[1]->is_none());
    return ok_status();
  };
  r = m.forward({f32_tensor({2, 3}, kX)});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidProgram);
  EXPECT_NE(r.status().message().find("'y' is a none, expected a tensor"), std::string::npos) << r.status().to_string();
}

TEST_F(ProgramRuntime, KernelFailureNamesTheNode) {
  auto p = sample_program();
  // Add of f32[2,3] and a constant reshaped to [3,2] cannot broadcast.
  p.data.methods[0].values[1].dims = {3, 2};
  Module m(write("kernel_fail.pte", p.bytes()));
  ASSERT_TRUE(m.load().ok());
  auto r = m.forward({f32_tensor({2, 3}, kX)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("method 'forward' instruction 0 (kernel Add 'add')"), std::string::npos)
      << r.status().to_string();
}

TEST_F(ProgramRuntime, BackendOptionsAfterLoadReachTheModulesHandles) {
  Module m(write_sample("set_option.pte"));
  ASSERT_TRUE(m.load().ok());
  std::vector<DelegateHandle*> got;
  stub_backend().on_set_option = [&](BackendOptionContext& ctx, std::span<const BackendOption> options) {
    got.assign(ctx.handles().begin(), ctx.handles().end());
    EXPECT_EQ(options.size(), 1u);
    return ok_status();
  };
  BackendOptions o;
  o.set_option("anything", "1");
  ASSERT_TRUE(m.set_backend_option("StubBackend", o).ok());
  EXPECT_EQ(got, stub_backend().live());
  Status none = m.set_backend_option("NoSuchBackend", o);
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  // The interface's defaults say the backend has no options.
  stub_backend().on_set_option = nullptr;
  EXPECT_EQ(m.set_backend_option("StubBackend", o).code(), StatusCode::kUnsupported);
  BackendOption q{"anything", false};
  EXPECT_EQ(m.get_backend_option("StubBackend", {&q, 1}).code(), StatusCode::kUnsupported);
  Module unloaded(write_sample("unloaded.pte"));
  EXPECT_EQ(unloaded.set_backend_option("StubBackend", o).code(), StatusCode::kInvalidState);
}

TEST(FreeableBuffer, FreesOnceAndMoves) {
  int released = 0;
  const char bytes[] = "abc";
  {
    FreeableBuffer a(bytes, 3, [&] { ++released; });
    EXPECT_EQ(a.size(), 3u);
    FreeableBuffer b(std::move(a));
    EXPECT_TRUE(a.freed());
    EXPECT_EQ(b.data(), bytes);
    b.free();
    b.free();
    EXPECT_TRUE(b.freed());
    EXPECT_EQ(b.size(), 0u);
    EXPECT_EQ(released, 1);
    FreeableBuffer c(bytes, 3, [&] { ++released; });
  }
  EXPECT_EQ(released, 2);  // c released by its destructor
}

}  // namespace
}  // namespace streamrt
