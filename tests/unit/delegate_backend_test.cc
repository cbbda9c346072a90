// StreamRTBackend's init on real engines: the automatic budget is computed once per program
// and split; the processed buffer is freed by init; every failure of a record or of its
// compile specs (kInvalidProgram / kIncompatible, naming the engine), and a program whose
// engine group is incomplete.
#include <gtest/gtest.h>

#include <atomic>

#include "delegate/engine_record.h"
#include "delegate/streamrt_backend.h"
#include "delegate_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// StreamRTBackend with an injected automatic budget, registered under its own name; the
// programs of these tests name it.
struct AutoBackend {
  std::atomic<int> calls{0};
  std::vector<std::vector<uint64_t>> seen_budgets;  // the engines' budgets when asked
  uint64_t value = 300000;
  delegate::StreamRtBackend backend{delegate::CoreOptions{[this](std::span<Engine* const> engines) {
    ++calls;
    std::vector<uint64_t> b;
    for (Engine* e : engines) b.push_back(e->weight_streaming_budget());
    seen_budgets.push_back(b);
    return value;
  }}};
  AutoBackend() { EXPECT_TRUE(register_backend("StreamRTAutoBackend", &backend).ok()); }
};

AutoBackend& auto_backend() {
  static AutoBackend* b = new AutoBackend();
  return *b;
}

// Forwards to the real StreamRTBackend and checks, after init, that the blob was freed.
struct ProbeBackend : BackendInterface {
  delegate::StreamRtBackend inner;
  int inits = 0, freed_after_init = 0;
  bool is_available() const override { return inner.is_available(); }
  Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) override {
    auto r = inner.init(ctx, processed, specs);
    ++inits;
    if (processed->freed()) ++freed_after_init;
    return r;
  }
  Status execute(BackendExecutionContext& ctx, DelegateHandle* h, std::span<EValue*> args) override {
    return inner.execute(ctx, h, args);
  }
  void destroy(DelegateHandle* h) override { inner.destroy(h); }
};

ProbeBackend& probe_backend() {
  static ProbeBackend* b = [] {
    auto* p = new ProbeBackend();
    EXPECT_TRUE(register_backend("StreamRTProbeBackend", p).ok());
    return p;
  }();
  return *b;
}

class DelegateBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    onnx_ = new std::string(write_graph_break_model(dir_->path().string()));
    compiled_ = new delegate::CompiledProgram(compile_break(*onnx_, true));
  }
  static void TearDownTestSuite() {
    delete compiled_;
    delete onnx_;
    delete dir_;
  }
  // The compiled program after `edit`, written and loaded; the load's status.
  template <typename F>
  Status load_edited(const std::string& name, F edit, const LoadBackendOptionsMap& options = {}) {
    delegate::CompiledProgram p = *compiled_;
    edit(p);
    Module m(write_compiled(std::move(p), dir_->file(name)));
    return m.load(options);
  }
  static std::vector<uint8_t>& record(delegate::CompiledProgram& p, size_t engine) {
    return p.segments[p.data.methods[0].delegates[engine].segment];
  }
  // Re-serializes engine `engine`'s record after `edit` of its metadata.
  template <typename F>
  static void edit_record(delegate::CompiledProgram& p, size_t engine, F edit) {
    auto view = delegate::read_engine_record(record(p, engine)).value();
    std::vector<uint8_t> plan(view.plan.begin(), view.plan.end());
    edit(view.meta);
    record(p, engine) = delegate::serialize_engine_record(view.meta, plan);
  }
  static void set_spec(delegate::CompiledProgram& p, size_t engine, const std::string& key, const std::string& value) {
    for (CompileSpec& s : p.data.methods[0].delegates[engine].compile_specs)
      if (s.key == key) s.value.assign(value.begin(), value.end());
  }

  static TempDir* dir_;
  static std::string* onnx_;
  static delegate::CompiledProgram* compiled_;
};

TempDir* DelegateBackend::dir_ = nullptr;
std::string* DelegateBackend::onnx_ = nullptr;
delegate::CompiledProgram* DelegateBackend::compiled_ = nullptr;

void expect_error(const Status& st, StatusCode code, const std::string& needle) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.to_string();
}

TEST_F(DelegateBackend, AutomaticBudgetIsComputedOncePerProgramAndSplit) {
  AutoBackend& ab = auto_backend();
  ab.calls = 0;
  ab.seen_budgets.clear();
  const std::string path = write_compiled(*compiled_, dir_->file("auto.pte"), "StreamRTAutoBackend");
  Module m(path);
  ASSERT_TRUE(m.load().ok());
  EXPECT_EQ(ab.calls.load(), 1);
  // Asked once, with both engines and neither holding streamable weights.
  ASSERT_EQ(ab.seen_budgets.size(), 1u);
  EXPECT_EQ(ab.seen_budgets[0], (std::vector<uint64_t>{0, 0}));
  // 300000 split 2:3.
  EXPECT_EQ(engine_budgets(m, "StreamRTAutoBackend"), (std::vector<uint64_t>{120000, 180000}));
  // Explicit budgets never ask; "auto" asks again, once.
  BackendOptions explicit_budget;
  explicit_budget.set_option("weight_streaming_budget", "1000001");
  ASSERT_TRUE(m.set_backend_option("StreamRTAutoBackend", explicit_budget).ok());
  EXPECT_EQ(ab.calls.load(), 1);
  EXPECT_EQ(engine_budgets(m, "StreamRTAutoBackend"), (std::vector<uint64_t>{400000, 600001}));
  BackendOptions automatic;
  automatic.set_option("weight_streaming_budget_per_engine", "auto");
  ab.value = 1000;
  ASSERT_TRUE(m.set_backend_option("StreamRTAutoBackend", automatic).ok());
  EXPECT_EQ(ab.calls.load(), 2);
  EXPECT_EQ(engine_budgets(m, "StreamRTAutoBackend"), (std::vector<uint64_t>{400, 600}));
  // Precedence with a baked value: baked beats automatic; load time beats both.
  const std::string baked = write_compiled(compile_break(*onnx_, true, std::nullopt, "4096"), dir_->file("auto_baked.pte"),
                                           "StreamRTAutoBackend");
  Module b(baked);
  ASSERT_TRUE(b.load().ok());
  EXPECT_EQ(engine_budgets(b, "StreamRTAutoBackend"), (std::vector<uint64_t>{4096, 4096}));
  ASSERT_TRUE(b.load(srt_options("weight_streaming_budget", "auto", "StreamRTAutoBackend")).ok());
  EXPECT_EQ(engine_budgets(b, "StreamRTAutoBackend"), (std::vector<uint64_t>{400, 600}));
  EXPECT_EQ(ab.calls.load(), 3);
  auto y = run_forward(b, break_model_input());
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_LE(max_abs_diff(*y, plain_engine_output(*onnx_, break_model_input())), 1e-5);
}

TEST_F(DelegateBackend, InitFreesTheProcessedBuffer) {
  ProbeBackend& probe = probe_backend();
  Module m(write_compiled(*compiled_, dir_->file("probe.pte"), "StreamRTProbeBackend"));
  ASSERT_TRUE(m.load().ok());
  EXPECT_EQ(probe.inits, 2);
  EXPECT_EQ(probe.freed_after_init, 2);
}

TEST_F(DelegateBackend, CorruptRecordsAreInvalidProgram) {
  expect_error(load_edited("garbage_record.pte", [](auto& p) { record(p, 1) = {1, 2, 3}; }), StatusCode::kInvalidProgram,
               "delegate 1 ('StreamRTBackend'): engine record: not a streamrt engine record (bad magic)");
  expect_error(load_edited("bitflip_record.pte", [](auto& p) { record(p, 0)[70] ^= 1; }), StatusCode::kInvalidProgram,
               "engine record: FlatBuffer checksum mismatch");
  // A byte of the plan inside: the plan's own checksum catches it.
  expect_error(load_edited("bitflip_plan.pte", [](auto& p) { record(p, 0)[record(p, 0).size() - 9] ^= 1; }),
               StatusCode::kInvalidProgram, "engine 'brk_engine0': plan: weights checksum mismatch");
  expect_error(load_edited("version_record.pte", [](auto& p) { record(p, 0)[8] = 9; }), StatusCode::kIncompatible,
               "engine record format version 9, this build reads version 1");
  expect_error(load_edited("bindings.pte", [](auto& p) { edit_record(p, 0, [](auto& r) { r.outputs = {"nope"}; }); }),
               StatusCode::kInvalidProgram, "engine 'brk_engine0': the record names bindings that the plan does not have");
  expect_error(load_edited("streamable.pte", [](auto& p) { edit_record(p, 1, [](auto& r) { r.streamable_size = 5; }); }),
               StatusCode::kInvalidProgram, "the record says 5 streamable bytes, the plan has 786432");
}

TEST_F(DelegateBackend, RecordForAnotherDeviceIsIncompatible) {
  // A CUDA record on a machine or build without a usable GPU; with one, the CPU plan inside
  // does not match the CUDA runtime. Either way kIncompatible naming the engine.
  Status st = load_edited("cuda_record.pte", [](auto& p) {
    edit_record(p, 0, [](auto& r) { r.device = {plan::DeviceKind::kCuda, 9, 0, "NVIDIA H100"}; });
  });
  EXPECT_EQ(st.code(), StatusCode::kIncompatible) << st.to_string();
  EXPECT_NE(st.message().find("brk_engine0"), std::string::npos) << st.to_string();
}

TEST_F(DelegateBackend, GroupCompileSpecsAreChecked) {
  expect_error(load_edited("index_range.pte", [](auto& p) { set_spec(p, 1, "engine_index", "2"); }),
               StatusCode::kInvalidProgram, "engine index 2 of 2 engines is out of range");
  expect_error(load_edited("index_twice.pte", [](auto& p) { set_spec(p, 1, "engine_index", "0"); }),
               StatusCode::kInvalidProgram, "engine index 0 is taken by engine 'brk_engine0'");
  expect_error(load_edited("count_differs.pte", [](auto& p) { set_spec(p, 1, "engine_count", "3"); }),
               StatusCode::kInvalidProgram, "differ from those of the program's other engines");
  expect_error(load_edited("count_bad.pte", [](auto& p) { set_spec(p, 0, "engine_count", "two"); }),
               StatusCode::kInvalidProgram, "compile spec engine_count is 'two'");
  expect_error(load_edited("count_huge.pte", [](auto& p) { set_spec(p, 0, "engine_count", "4000000000"); }),
               StatusCode::kInvalidProgram, "out of range");
  // Engines that disagree on the baked budget.
  expect_error(load_edited("baked_differs.pte",
                           [](auto& p) {
                             const std::string v = "1GiB";
                             p.data.methods[0].delegates[1].compile_specs.push_back(
                                 {"weight_streaming_budget", std::vector<uint8_t>(v.begin(), v.end())});
                           }),
               StatusCode::kInvalidProgram, "differ from those of the program's other engines");
  // A malformed baked value, caught at load for programs not made by `streamrt compile`.
  expect_error(load_edited("baked_bad.pte",
                           [](auto& p) {
                             for (auto& d : p.data.methods[0].delegates)
                               d.compile_specs.push_back({"weight_streaming_budget", {'x'}});
                           }),
               StatusCode::kInvalidArgument, "weight_streaming_budget: invalid weight-streaming budget \"x\"");
}

TEST_F(DelegateBackend, IncompleteGroupFailsAtExecution) {
  // Both engines claim a program of three: the load succeeds (no backend can know that no
  // third init comes), execution says what is missing.
  delegate::CompiledProgram p = *compiled_;
  set_spec(p, 0, "engine_count", "3");
  set_spec(p, 1, "engine_count", "3");
  Module m(write_compiled(std::move(p), dir_->file("incomplete.pte")));
  ASSERT_TRUE(m.load().ok());
  auto y = run_forward(m, break_model_input());
  expect_error(y.status(), StatusCode::kInvalidState, "not every engine of its program is initialized (2 of 3)");
  BackendOptions o;
  o.set_option("weight_streaming_budget", "1");
  EXPECT_EQ(m.set_backend_option("StreamRTBackend", o).code(), StatusCode::kInvalidState);
}

TEST_F(DelegateBackend, DelegateCallArgumentsAreChecked) {
  // A program whose delegate call passes a scalar where the engine takes a tensor.
  delegate::CompiledProgram p = *compiled_;
  auto& m = p.data.methods[0];
  program::ValueData scalar;
  scalar.tag = EValue::Tag::kInt;
  scalar.name = "k";
  m.values.push_back(scalar);
  m.instructions[2].delegate.inputs[0] = static_cast<int32_t>(m.values.size() - 1);
  Module mod(write_compiled(std::move(p), dir_->file("scalar_arg.pte")));
  ASSERT_TRUE(mod.load().ok());
  expect_error(run_forward(mod, break_model_input()).status(), StatusCode::kInvalidArgument,
               "engine 'brk_engine1' input 's' is a int, expected a tensor");
}

}  // namespace
}  // namespace streamrt
