// End to end on the CPU: the graph-break model (two engines around a portable Softmax)
// compiled with weight streaming; outputs equal the plain engine's under every budget form;
// the split of a total budget engine by engine; precedence of load-time over baked values;
// a live change while several threads call forward.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/logging.h"
#include "delegate_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

class DelegateE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    onnx_ = new std::string(write_graph_break_model(dir_->path().string()));
    reference_ = new std::vector<float>(plain_engine_output(*onnx_, break_model_input()));
    streaming_ = new std::string(write_compiled(compile_break(*onnx_, true), dir_->file("streaming.pte")));
  }
  static void TearDownTestSuite() {
    delete streaming_;
    delete reference_;
    delete onnx_;
    delete dir_;
  }

  // Loads `path` with `options`, runs forward, checks the output against the plain engine's,
  // and returns the budgets in force.
  std::vector<uint64_t> load_and_check(const std::string& path, const LoadBackendOptionsMap& options = {}) {
    Module m(path);
    Status st = m.load(options);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
    check_output(m);
    return engine_budgets(m);
  }
  void check_output(const Module& m) {
    auto y = run_forward(m, break_model_input());
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    // The same CPU kernels on the same values: equal to rounding at most.
    EXPECT_LE(max_abs_diff(*y, *reference_), 1e-5) << "against the plain engine";
    if (first_.empty()) first_ = *y;
    EXPECT_EQ(*y, first_) << "outputs differ between budgets";
  }

  static TempDir* dir_;
  static std::string* onnx_;
  static std::vector<float>* reference_;
  static std::string* streaming_;
  std::vector<float> first_;
};

TempDir* DelegateE2E::dir_ = nullptr;
std::string* DelegateE2E::onnx_ = nullptr;
std::vector<float>* DelegateE2E::reference_ = nullptr;
std::string* DelegateE2E::streaming_ = nullptr;

TEST_F(DelegateE2E, CompileMakesTwoEnginesAroundAPortableKernel) {
  auto p = compile_break(*onnx_, true);
  ASSERT_EQ(p.report.engines.size(), 2u);
  EXPECT_EQ(p.report.engines[0].name, "brk_engine0");
  EXPECT_EQ(p.report.engines[0].nodes, 3u);  // mm1, relu1, mm2
  EXPECT_EQ(p.report.engines[1].nodes, 4u);  // mm3, relu2, mm4, mm5
  EXPECT_EQ(p.report.engines[0].streamable_size, kEngine0Streamable);
  EXPECT_EQ(p.report.engines[1].streamable_size, kEngine1Streamable);
  EXPECT_EQ(p.report.kernel_calls, std::vector<std::string>{"Softmax"});
  const auto& m = p.data.methods[0];
  ASSERT_EQ(m.instructions.size(), 3u);
  EXPECT_EQ(m.instructions[0].kind, program::Instruction::Kind::kDelegateCall);
  EXPECT_EQ(m.instructions[1].kind, program::Instruction::Kind::kKernelCall);
  EXPECT_EQ(m.instructions[1].kernel.op_type, "Softmax");
  EXPECT_EQ(m.instructions[2].kind, program::Instruction::Kind::kDelegateCall);
  ASSERT_EQ(m.delegates.size(), 2u);
  EXPECT_EQ(m.delegates[1].backend, "StreamRTBackend");
  // No budget given: only the group's shape is baked.
  ASSERT_EQ(m.delegates[1].compile_specs.size(), 2u);
  EXPECT_EQ(m.delegates[1].compile_specs[0].key, "engine_index");
  EXPECT_EQ(m.delegates[1].compile_specs[0].value_string(), "1");
  EXPECT_EQ(m.delegates[1].compile_specs[1].value_string(), "2");
}

TEST_F(DelegateE2E, WithoutOptionsTheAutomaticBudgetApplies) {
  auto budgets = load_and_check(*streaming_);
  ASSERT_EQ(budgets.size(), 2u);
  EXPECT_LE(budgets[0], kEngine0Streamable);
  EXPECT_LE(budgets[1], kEngine1Streamable);
}

// A total is split in proportion to the streamable sizes (2:3), exactly: by hand,
// 1000001 * 2/5 = 400000.4 and * 3/5 = 600000.6; the one byte left goes to the larger remainder.
TEST_F(DelegateE2E, TotalBudgetIsSplitEngineByEngine) {
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget", "1000001")),
            (std::vector<uint64_t>{400000, 600001}));
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget", int64_t{1000001})),
            (std::vector<uint64_t>{400000, 600001}));
  // 50% of 1310720 = 655360 = 262144 + 393216.
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget", "50%")),
            (std::vector<uint64_t>{262144, 393216}));
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget", "0")), (std::vector<uint64_t>{0, 0}));
  // Above the total streamable size: clamped, every weight resident.
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget", "8GiB")),
            (std::vector<uint64_t>{kEngine0Streamable, kEngine1Streamable}));
}

TEST_F(DelegateE2E, PerEngineBudgetAppliesToEach) {
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget_per_engine", "300000")),
            (std::vector<uint64_t>{300000, 300000}));
  // 600000 is above engine 0's 524288: clamped there.
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget_per_engine", "600000")),
            (std::vector<uint64_t>{kEngine0Streamable, 600000}));
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget_per_engine", "25%")),
            (std::vector<uint64_t>{131072, 196608}));
  EXPECT_EQ(load_and_check(*streaming_, srt_options("weight_streaming_budget_per_engine", "64KiB")),
            (std::vector<uint64_t>{65536, 65536}));
}

TEST_F(DelegateE2E, BakedBudgetAndItsPrecedence) {
  const std::string baked = write_compiled(compile_break(*onnx_, true, "1000001"), dir_->file("baked.pte"));
  const std::string baked_each =
      write_compiled(compile_break(*onnx_, true, std::nullopt, "100000"), dir_->file("baked_each.pte"));
  // Baked alone.
  EXPECT_EQ(load_and_check(baked), (std::vector<uint64_t>{400000, 600001}));
  EXPECT_EQ(load_and_check(baked_each), (std::vector<uint64_t>{100000, 100000}));
  // Load time over baked, whichever keys each uses.
  EXPECT_EQ(load_and_check(baked, srt_options("weight_streaming_budget_per_engine", "200000")),
            (std::vector<uint64_t>{200000, 200000}));
  EXPECT_EQ(load_and_check(baked_each, srt_options("weight_streaming_budget", "50%")),
            (std::vector<uint64_t>{262144, 393216}));
  // An empty load-time value warns and counts as unset: the baked value applies.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_and_check(baked, srt_options("weight_streaming_budget", "")), (std::vector<uint64_t>{400000, 600001}));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("empty weight_streaming_budget ignored"), std::string::npos);
}

TEST_F(DelegateE2E, MalformedLoadTimeBudgetsAreInvalidArgument) {
  Module m(*streaming_);
  ASSERT_TRUE(m.load(srt_options("weight_streaming_budget", "1000001")).ok());
  struct Case {
    std::string key;
    BackendOptionValue value;
    std::string message;
  };
  const Case cases[] = {
      {"weight_streaming_budget", "8gb", "weight_streaming_budget: invalid weight-streaming budget \"8gb\""},
      {"weight_streaming_budget_per_engine", "-5", "weight_streaming_budget_per_engine: invalid weight-streaming budget \"-5\""},
      {"weight_streaming_budget", int64_t{-1}, "weight_streaming_budget is -1"},
      {"weight_streaming_budget", true, "weight_streaming_budget is a bool"},
      {"weight_streaming_budgt", "1GiB", "unknown option 'weight_streaming_budgt'"},
  };
  for (const Case& c : cases) {
    Status st = m.load(srt_options(c.key, c.value));
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.key;
    EXPECT_NE(st.message().find(c.message), std::string::npos) << st.to_string();
  }
  BackendOptions both;
  both.set_option("weight_streaming_budget", "1GiB").set_option("weight_streaming_budget_per_engine", "1GiB");
  LoadBackendOptionsMap map;
  ASSERT_TRUE(map.set_options("StreamRTBackend", both).ok());
  Status st = m.load(map);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("both weight_streaming_budget"), std::string::npos) << st.to_string();
  // The failed loads kept the options of the last good one.
  const BackendOptions* kept = m.backend_options().get("StreamRTBackend");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(std::get<std::string>(kept->find("weight_streaming_budget")->value), "1000001");
}

TEST_F(DelegateE2E, MalformedBakedBudgetIsRejectedAtCompileTime) {
  delegate::CompileOptions o;
  o.fallback_ops = {"Softmax"};
  o.builder.weight_streaming = true;
  o.budget = "8 GiB";
  auto r = delegate::compile_onnx(*onnx_, o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("weight_streaming_budget: invalid weight-streaming budget \"8 GiB\""), std::string::npos)
      << r.status().to_string();
  o.budget = "1GiB";
  o.budget_per_engine = "1GiB";
  EXPECT_EQ(delegate::compile_onnx(*onnx_, o).status().code(), StatusCode::kInvalidArgument);
  o.budget_per_engine.reset();
  o.fallback_ops = {"Softmx"};
  r = delegate::compile_onnx(*onnx_, o);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'Softmx', which is not an op"), std::string::npos);
}

TEST_F(DelegateE2E, ExplicitBudgetOnAnEngineWithoutStreamableWeightsIsIgnored) {
  const std::string plain = write_compiled(compile_break(*onnx_, false, "1000001"), dir_->file("plain.pte"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_and_check(plain), (std::vector<uint64_t>{0, 0}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("engine 'brk_engine0' has no streamable weights"), std::string::npos) << err;
  EXPECT_NE(err.find("compile spec weight_streaming_budget=976.56 KiB ignored"), std::string::npos) << err;
}

TEST_F(DelegateE2E, LiveChangeWhileThreadsCallForward) {
  Module m(*streaming_);
  ASSERT_TRUE(m.load(srt_options("weight_streaming_budget", "1000001")).ok());
  check_output(m);
  ForwardLoad load(m, first_, 4);
  struct Change {
    std::string key, value;
    std::vector<uint64_t> expect;
  };
  const Change changes[] = {
      {"weight_streaming_budget", "0", {0, 0}},
      {"weight_streaming_budget_per_engine", "100000", {100000, 100000}},
      {"weight_streaming_budget", "50%", {262144, 393216}},
      {"weight_streaming_budget", "8GiB", {kEngine0Streamable, kEngine1Streamable}},
      {"weight_streaming_budget", "1000001", {400000, 600001}},
  };
  for (int round = 0; round < 3; ++round)
    for (const Change& c : changes) {
      load.wait_for_runs(2);  // executions are in flight
      BackendOptions o;
      o.set_option(c.key, c.value);
      Status st = m.set_backend_option("StreamRTBackend", o);
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_EQ(engine_budgets(m), c.expect) << c.key << "=" << c.value;
    }
  // A failed change keeps the budget in force.
  BackendOptions bad;
  bad.set_option("weight_streaming_budget", "lots");
  Status st = m.set_backend_option("StreamRTBackend", bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("budget \"lots\""), std::string::npos) << st.to_string();
  BackendOptions both;
  both.set_option("weight_streaming_budget", "1").set_option("weight_streaming_budget_per_engine", "1");
  EXPECT_EQ(m.set_backend_option("StreamRTBackend", both).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_budgets(m), (std::vector<uint64_t>{400000, 600001}));
  load.wait_for_runs(4);
  load.stop();
  EXPECT_EQ(load.wrong(), 0) << "of " << load.runs() << " runs";
  // get_option's totals.
  BackendOption total{"weight_streaming_budget", std::string()}, size{"streamable_weights_size", std::string()};
  ASSERT_TRUE(m.get_backend_option("StreamRTBackend", {&total, 1}).ok());
  ASSERT_TRUE(m.get_backend_option("StreamRTBackend", {&size, 1}).ok());
  EXPECT_EQ(std::get<std::string>(total.value), "1000001");
  EXPECT_EQ(std::get<std::string>(size.value), std::to_string(kEngine0Streamable + kEngine1Streamable));
  BackendOption missing{"weight_streaming_budget.2", std::string()};
  EXPECT_EQ(m.get_backend_option("StreamRTBackend", {&missing, 1}).code(), StatusCode::kNotFound);
}

// The same program for CUDA, where a GPU answers (skipped otherwise): engines on the device
// with host <-> device staging of their I/O, outputs within fp32 tolerance of the CPU plain
// engine, the exact split, and a live change under concurrent forward calls.
TEST(DelegateE2ECuda, GraphBreakOnTheGpu) {
  RuntimeOptions cuda;
  cuda.device = DeviceType::kCuda;
  if (auto rt = Runtime::create(cuda); !rt.ok()) GTEST_SKIP() << "skipped: no CUDA device (" << rt.status().to_string() << ")";
  TempDir dir;
  const std::string onnx = write_graph_break_model(dir.path().string());
  const std::vector<float> reference = plain_engine_output(onnx, break_model_input());
  delegate::CompileOptions o;
  o.builder.device = DeviceType::kCuda;
  o.builder.weight_streaming = true;
  o.fallback_ops = {"Softmax"};
  auto compiled = delegate::compile_onnx(onnx, o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  ASSERT_EQ(compiled->report.engines.size(), 2u);
  Module m(write_compiled(std::move(compiled).value(), dir.file("cuda.pte")));
  ASSERT_TRUE(m.load(srt_options("weight_streaming_budget", "1000001")).ok());
  EXPECT_EQ(engine_budgets(m), (std::vector<uint64_t>{400000, 600001}));
  auto y = run_forward(m, break_model_input());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  for (size_t i = 0; i < y->size(); ++i) EXPECT_NEAR((*y)[i], reference[i], 1e-5 + 1e-4 * std::fabs(reference[i])) << i;
  ForwardLoad load(m, *y, 3);
  for (const char* budget : {"0", "50%", "8GiB", "1000001"}) {
    load.wait_for_runs(2);
    BackendOptions b;
    b.set_option("weight_streaming_budget", budget);
    Status st = m.set_backend_option("StreamRTBackend", b);
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  load.stop();
  EXPECT_EQ(load.wrong(), 0) << "of " << load.runs() << " runs";
  EXPECT_EQ(engine_budgets(m), (std::vector<uint64_t>{400000, 600001}));
}

// Writes the graph-break model where the CLI tests (tests/cli_tests.cmake) expect it.
TEST(DelegateFixture, WriteGraphBreakModel) {
  const std::string dir = std::string(STREAMRT_BINARY_DIR) + "/cli_tests";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(write_graph_break_model(dir), dir + "/graph_break.onnx");
  EXPECT_TRUE(std::filesystem::exists(dir + "/graph_break.onnx"));
}

}  // namespace
}  // namespace streamrt
