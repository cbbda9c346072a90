// Tactics on the host: the "__lt_algo" record's codec, its round trip through a plan file, plans
// with malformed or foreign records still loading and running, and choose_tactics driving a
// fake tuner (opt shapes, TF32 marks, failures that keep the heuristic).
#include <gtest/gtest.h>

#include <cmath>

#include "builder/tactics.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using builder::LtAlgoRecord;
using testing::TacticGemmModel;
using testing::TempDir;

LtAlgoRecord sample_record() {
  LtAlgoRecord r;
  r.library_version = 130100;
  r.flags = builder::kLtAlgoTf32 | builder::kLtAlgoBias;
  r.m = 64, r.n = 384, r.k = 256, r.batch = 3;
  r.candidates = 8, r.rank = 2;
  r.best_ns = 12345, r.heuristic_ns = 15100;
  for (size_t i = 0; i < r.algo.size(); ++i) r.algo[i] = 0x8000000000000001ull * (i + 1) + i;  // high bits set
  return r;
}

void expect_same(const LtAlgoRecord& a, const LtAlgoRecord& b) {
  EXPECT_EQ(a.library_version, b.library_version);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.candidates, b.candidates);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.best_ns, b.best_ns);
  EXPECT_EQ(a.heuristic_ns, b.heuristic_ns);
  EXPECT_EQ(a.algo, b.algo);
}

TEST(TacticRecord, EncodesTheDocumentedLayoutAndRoundTrips) {
  const LtAlgoRecord r = sample_record();
  ir::Attribute a = builder::encode_lt_algo(r);
  ASSERT_EQ(a.kind, ir::Attribute::Kind::kInts);
  ASSERT_EQ(a.ints.size(), 19u);
  EXPECT_EQ(a.ints[0], 0x00314F474C41544CLL);  // "LTALGO1"
  EXPECT_EQ(a.ints[1], 130100);
  EXPECT_EQ(a.ints[2], 3);
  EXPECT_EQ(a.ints[3], 64);
  EXPECT_EQ(a.ints[6], 3);
  EXPECT_EQ(a.ints[8], 2);
  EXPECT_EQ(static_cast<uint64_t>(a.ints[11]), r.algo[0]);
  EXPECT_EQ(static_cast<uint64_t>(a.ints[18]), r.algo[7]);
  auto back = builder::decode_lt_algo(a);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same(*back, r);
}

TEST(TacticRecord, MalformedRecordsAreInvalidPlanNamingTheProblem) {
  const ir::Attribute good = builder::encode_lt_algo(sample_record());
  auto expect_bad = [&](ir::Attribute a, const std::string& words) {
    auto r = builder::decode_lt_algo(a);
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan);
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("__lt_algo"), std::string::npos) << r.status().message();
  };
  expect_bad(ir::Attribute::make_string("algo"), "is string, expected ints");
  expect_bad(ir::Attribute::make_int(7), "is int, expected ints");
  ir::Attribute a = good;
  a.ints.pop_back();
  expect_bad(a, "has 18 values, expected 19");
  a = good;
  a.ints.push_back(0);
  expect_bad(a, "has 20 values, expected 19");
  expect_bad(ir::Attribute::make_ints({}), "has 0 values");
  a = good;
  a.ints[0] = 0x00324F474C41544CLL;  // "LTALGO2": a layout this streamrt does not know
  expect_bad(a, "magic");
  a = good;
  a.ints[1] = 0;
  expect_bad(a, "cuBLASLt version 0");
  a = good;
  a.ints[2] = 4;
  expect_bad(a, "unknown flags 4");
  a = good;
  a.ints[2] = -1;
  expect_bad(a, "unknown flags -1");
  a = good;
  a.ints[5] = 0;  // k
  expect_bad(a, "is not positive");
  a = good;
  a.ints[8] = 8;  // rank == candidates
  expect_bad(a, "inconsistent");
  a = good;
  a.ints[9] = -5;
  expect_bad(a, "inconsistent");
}

TEST(TacticRecord, AppliesOnlyToTheSameLibraryVersionAndFlags) {
  const LtAlgoRecord r = sample_record();
  EXPECT_TRUE(builder::lt_algo_applies(r, 130100, builder::kLtAlgoTf32 | builder::kLtAlgoBias));
  EXPECT_FALSE(builder::lt_algo_applies(r, 130101, builder::kLtAlgoTf32 | builder::kLtAlgoBias));
  EXPECT_FALSE(builder::lt_algo_applies(r, 130100, builder::kLtAlgoBias));  // timed with TF32
  EXPECT_FALSE(builder::lt_algo_applies(r, 130100, builder::kLtAlgoTf32));  // timed with the bias epilogue
}

TEST(TacticRecord, Tf32NeedsAnIntAttributeOfOne) {
  ir::Node n;
  EXPECT_FALSE(builder::step_allows_tf32(n));
  n.attrs[builder::kTf32Attr] = ir::Attribute::make_int(1);
  EXPECT_TRUE(builder::step_allows_tf32(n));
  n.attrs[builder::kTf32Attr] = ir::Attribute::make_int(2);
  EXPECT_FALSE(builder::step_allows_tf32(n));
  n.attrs[builder::kTf32Attr] = ir::Attribute::make_float(1.f);
  EXPECT_FALSE(builder::step_allows_tf32(n));
}

TEST(TacticRecord, DescribeForInspect) {
  ir::Node n;
  EXPECT_EQ(builder::describe_tactics(n), "");
  n.attrs[builder::kLtAlgoAttr] = builder::encode_lt_algo(sample_record());
  n.attrs[builder::kTf32Attr] = ir::Attribute::make_int(1);
  EXPECT_EQ(builder::describe_tactics(n),
            "cuBLASLt algo: heuristic #2 of 8, 12.3 us (#0: 15.1 us) at 64x384x256 batch 3 with bias, "
            "cuBLASLt 130100; tf32");
  n.attrs[builder::kLtAlgoAttr] = ir::Attribute::make_ints({1, 2, 3});
  n.attrs.erase(builder::kTf32Attr);
  EXPECT_NE(builder::describe_tactics(n).find("unreadable"), std::string::npos) << builder::describe_tactics(n);
  // A MatMulGroup's records, one a weight.
  EXPECT_EQ(builder::lt_algo_attr(0), builder::kLtAlgoAttr);
  EXPECT_EQ(builder::lt_algo_attr(2), std::string(builder::kLtAlgoAttr) + "2");
  n.attrs[builder::kLtAlgoAttr] = builder::encode_lt_algo(sample_record());
  n.attrs[builder::lt_algo_attr(2)] = builder::encode_lt_algo(sample_record());
  const std::string both = builder::describe_tactics(n);
  EXPECT_EQ(both.find("cuBLASLt algo: heuristic #2"), 0u) << both;
  EXPECT_NE(both.find("; GEMM 2: cuBLASLt algo: heuristic #2"), std::string::npos) << both;
}

TEST(TacticRecord, FewRowRecordChoosesByRowKindAndBadOnesKeepTheKernel) {
  ir::Node n;
  EXPECT_TRUE(builder::step_few_row_kernel(n, 8));  // no record: the kernel
  n.attrs[builder::kFewRowAttr] = builder::encode_few_row({false, 166000, 134500, 8});
  auto r = builder::decode_few_row(n.attrs[builder::kFewRowAttr]);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->kernel);
  EXPECT_EQ(r->kernel_ns, 166000);
  EXPECT_EQ(r->steps_ns, 134500);
  EXPECT_EQ(r->rows, 8);
  EXPECT_EQ(builder::describe_tactics(n), "many-row path: 134.5 us (few-row kernel: 166.0 us) at 8 rows");
  // Timed at eight rows, the choice holds for two to eight; one row is the GEMV's, which it did not time.
  EXPECT_FALSE(builder::step_few_row_kernel(n, 2));
  EXPECT_FALSE(builder::step_few_row_kernel(n, 8));
  EXPECT_TRUE(builder::step_few_row_kernel(n, 1));
  n.attrs[builder::kFewRowAttr] = builder::encode_few_row({false, 130000, 120000, 1});
  EXPECT_FALSE(builder::step_few_row_kernel(n, 1));
  EXPECT_TRUE(builder::step_few_row_kernel(n, 4));
  n.attrs[builder::kFewRowAttr] = builder::encode_few_row({true, 120000, 130000, 4});
  EXPECT_TRUE(builder::step_few_row_kernel(n, 4));
  EXPECT_EQ(builder::describe_tactics(n), "few-row kernel: 120.0 us (many-row path: 130.0 us) at 4 rows");
  for (const ir::Attribute& bad :
       {ir::Attribute::make_ints({0, 1, 2}), ir::Attribute::make_ints({2, 1, 2, 8}), ir::Attribute::make_ints({0, -1, 2, 8}),
        ir::Attribute::make_ints({0, 1, 2, 0}), ir::Attribute::make_ints({0, 1, 2, 9}), ir::Attribute::make_int(0)}) {
    n.attrs[builder::kFewRowAttr] = bad;
    EXPECT_TRUE(builder::step_few_row_kernel(n, 8));
    auto d = builder::decode_few_row(bad);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidPlan);
    EXPECT_NE(d.status().message().find("__few_row"), std::string::npos) << d.status().message();
    EXPECT_NE(builder::describe_tactics(n).find("unreadable"), std::string::npos);
  }
}

TEST(TacticRecord, GroupGemmRecordRoundTripsAndBadOnesAreRefused) {
  ir::Node n;
  EXPECT_EQ(builder::step_group_gemm_cols(n, 512), 0);
  n.attrs[builder::kGroupGemmAttr] = builder::encode_group_gemm({256, 12300, 20100, 512});
  auto r = builder::decode_group_gemm(n.attrs[builder::kGroupGemmAttr]);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cols, 256);
  EXPECT_EQ(r->group_ns, 12300);
  EXPECT_EQ(r->lt_ns, 20100);
  EXPECT_EQ(r->rows, 512);
  EXPECT_EQ(builder::describe_tactics(n),
            "group GEMM of 256 columns: 12.3 us (cuBLASLt, a GEMM a weight: 20.1 us) at 512 rows");
  // Chosen up to kGroupGemmRowsReach (8) x the timed rows, as far as it was measured; beyond, cuBLASLt.
  EXPECT_EQ(builder::step_group_gemm_cols(n, 1), 256);
  EXPECT_EQ(builder::step_group_gemm_cols(n, 4096), 256);
  EXPECT_EQ(builder::step_group_gemm_cols(n, 4097), 0);
  // A record without rows applies at any count.
  n.attrs[builder::kGroupGemmAttr] = ir::Attribute::make_ints({128, 12300, 20100});
  EXPECT_EQ(builder::step_group_gemm_cols(n, 1 << 20), 128);
  n.attrs[builder::kGroupGemmAttr] = builder::encode_group_gemm({0, 30000, 20000, 2048});
  EXPECT_EQ(builder::step_group_gemm_cols(n, 2048), 0);
  EXPECT_EQ(builder::describe_tactics(n), "cuBLASLt, a GEMM a weight: 20.0 us (group GEMM: 30.0 us) at 2048 rows");
  // Malformed records never choose it (the kernel keeps cuBLASLt) and say why.
  for (const ir::Attribute& bad :
       {ir::Attribute::make_ints({128, 2}), ir::Attribute::make_ints({64, 1, 1, 8}), ir::Attribute::make_ints({128, -5, 1}),
        ir::Attribute::make_ints({128, 5, 1, -8}), ir::Attribute::make_ints({128, 5, 1, 8, 9}), ir::Attribute::make_int(1)}) {
    n.attrs[builder::kGroupGemmAttr] = bad;
    EXPECT_EQ(builder::step_group_gemm_cols(n, 8), 0);
    auto d = builder::decode_group_gemm(bad);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidPlan);
    EXPECT_NE(d.status().message().find("__group_gemm"), std::string::npos) << d.status().message();
    EXPECT_NE(builder::describe_tactics(n).find("unreadable"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------
// Plans carrying tactics

class TacticPlan : public ::testing::Test {
 protected:
  TempDir dir;
  TacticGemmModel model{16, 12, 8};

  std::vector<uint8_t> build_cpu(BuilderConfig config = {}) {
    config.device = DeviceType::kCpu;
    config.profiles["X"] = {{1, model.k}, {4, model.k}, {8, model.k}};
    auto bytes = build_plan_from_onnx(model.write(dir), config);
    EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
    return bytes.ok() ? *bytes : std::vector<uint8_t>{};
  }

  void expect_runs_correctly(std::vector<uint8_t> plan) {
    const int64_t batch = 5;
    const std::vector<float> x = testing::random_floats(static_cast<size_t>(batch * model.k), 9);
    auto y = testing::run_gemm_plan(DeviceType::kCpu, std::move(plan), x, batch, model.k, model.n);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    const std::vector<double> ref = model.reference(x, batch);
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR((*y)[i], ref[i], 1e-5 + 1e-4 * std::fabs(ref[i])) << i;
  }
};

TEST_F(TacticPlan, AttributesRoundTripThroughAPlanFile) {
  plan::PlanData p = testing::read_back(build_cpu());
  ir::Node* mm = testing::find_step(p, "MatMul");
  ASSERT_NE(mm, nullptr);
  const LtAlgoRecord r = sample_record();
  mm->attrs[builder::kLtAlgoAttr] = builder::encode_lt_algo(r);
  mm->attrs[builder::kTf32Attr] = ir::Attribute::make_int(1);
  const std::string path = dir.file("tactics.plan");
  ASSERT_TRUE(plan::write_plan(p, path).ok());
  auto lp = plan::read_plan(path);
  ASSERT_TRUE(lp.ok()) << lp.status().to_string();
  ir::Node* back = testing::find_step(lp->data, "MatMul");
  ASSERT_NE(back, nullptr);
  ASSERT_TRUE(back->has_attr(builder::kLtAlgoAttr));
  auto decoded = builder::decode_lt_algo(back->attrs.at(builder::kLtAlgoAttr));
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  expect_same(*decoded, r);
  EXPECT_TRUE(builder::step_allows_tf32(*back));
  EXPECT_FALSE(builder::step_allows_tf32(*testing::find_step(lp->data, "Gemm")));
}

TEST_F(TacticPlan, MalformedOrForeignRecordsStillLoadAndRun) {
  plan::PlanData p = testing::read_back(build_cpu());
  LtAlgoRecord foreign = sample_record();
  foreign.library_version = 1;  // another cuBLASLt: the kernel must ignore it
  testing::find_step(p, "MatMul")->attrs[builder::kLtAlgoAttr] = ir::Attribute::make_ints({1, 2, 3});
  testing::find_step(p, "Gemm")->attrs[builder::kLtAlgoAttr] = builder::encode_lt_algo(foreign);
  auto bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  expect_runs_correctly(std::move(bytes).value());
  // Wrongly typed ones too.
  testing::find_step(p, "MatMul")->attrs[builder::kLtAlgoAttr] = ir::Attribute::make_string("fast please");
  testing::find_step(p, "Gemm")->attrs[builder::kTf32Attr] = ir::Attribute::make_string("yes");
  bytes = plan::serialize_plan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  expect_runs_correctly(std::move(bytes).value());
}

TEST_F(TacticPlan, CpuBuildsIgnoreTf32AndTactics) {
  BuilderConfig c;
  c.allow_tf32 = true;
  BuildReport rep;
  c.device = DeviceType::kCpu;
  c.profiles["X"] = {{1, model.k}, {4, model.k}, {8, model.k}};
  auto bytes = build_plan_from_onnx(model.write(dir), c, &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(rep.steps_tuned, 0u);
  plan::PlanData p = testing::read_back(*bytes);
  for (const ir::Node& s : p.steps) EXPECT_EQ(builder::describe_tactics(s), "") << s.describe();
  expect_runs_correctly(std::move(bytes).value());
}

// ---------------------------------------------------------------------------------------
// choose_tactics with a fake tuner

struct FakeSession : builder::TacticSession {
  std::vector<std::string>* seen;
  std::string fail_op;  // tune() of this op fails
  StatusCode fail_code = StatusCode::kUnsupported;
  Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo> in) override {
    std::string line = step.op_type;
    for (const auto& t : in) {
      line += ' ';
      line += t.dtype == DataType::kUndefined ? std::string("-") : dims_to_string(t.dims);
    }
    seen->push_back(line);
    if (step.op_type == fail_op) return Status(fail_code, "fake failure");
    if (step.op_type != "MatMul") return false;
    step.attrs["__fake"] = ir::Attribute::make_int(static_cast<int64_t>(seen->size()));  // which timing
    return true;
  }
};

struct FakeTuner : builder::TacticTuner {
  std::vector<std::string> seen;
  std::string fail_op;
  StatusCode fail_code = StatusCode::kUnsupported;
  int opened = 0;
  DeviceType device() const override { return DeviceType::kCuda; }
  Result<std::unique_ptr<builder::TacticSession>> open() override {
    ++opened;
    auto s = std::make_unique<FakeSession>();
    s->seen = &seen;
    s->fail_op = fail_op;
    s->fail_code = fail_code;
    return std::unique_ptr<builder::TacticSession>(std::move(s));
  }
};

class ChooseTactics : public TacticPlan {
 protected:
  void SetUp() override { plan = testing::read_back(build_cpu()); }
  BuilderConfig cuda_config() {
    BuilderConfig c;
    c.device = DeviceType::kCuda;
    return c;
  }
  plan::PlanData plan;
  FakeTuner tuner;
};

TEST_F(ChooseTactics, TunerSeesEveryStepAtTheOptShapes) {
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(plan, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.opened, 1);
  // Profile opt is batch 4; Gemm's C is [8], W2 [8, 12].
  EXPECT_EQ(tuner.seen, (std::vector<std::string>{"MatMul 4x16 16x12", "Gemm 4x12 8x12 8"}));
  EXPECT_EQ(rep.steps_tuned, 1u);
  EXPECT_GE(rep.tactic_ms, 0.0);
  EXPECT_TRUE(testing::find_step(plan, "MatMul")->has_attr("__fake"));
  EXPECT_FALSE(testing::find_step(plan, "Gemm")->has_attr(builder::kTf32Attr));
}

TEST_F(ChooseTactics, Tf32MarksFloatGemmsOnlyForCuda) {
  BuilderConfig c = cuda_config();
  c.allow_tf32 = true;
  c.tactics = false;
  ASSERT_TRUE(builder::choose_tactics(plan, c, nullptr, &tuner).ok());
  EXPECT_EQ(tuner.opened, 0);  // --no-tactics: nothing timed
  EXPECT_TRUE(builder::step_allows_tf32(*testing::find_step(plan, "MatMul")));
  EXPECT_TRUE(builder::step_allows_tf32(*testing::find_step(plan, "Gemm")));
  c.device = DeviceType::kCpu;
  plan::PlanData cpu_plan = testing::read_back(build_cpu());
  ASSERT_TRUE(builder::choose_tactics(cpu_plan, c, nullptr, &tuner).ok());
  EXPECT_FALSE(builder::step_allows_tf32(*testing::find_step(cpu_plan, "MatMul")));
}

TEST_F(ChooseTactics, AFailedStepKeepsTheHeuristicAndTheBuildGoesOn) {
  tuner.fail_op = "MatMul";
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(plan, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 2u);  // Gemm was still offered
  EXPECT_EQ(rep.steps_tuned, 0u);
  EXPECT_FALSE(testing::find_step(plan, "MatMul")->has_attr("__fake"));
}

TEST_F(ChooseTactics, ADeviceErrorStopsTuning) {
  tuner.fail_op = "MatMul";
  tuner.fail_code = StatusCode::kDeviceError;
  ASSERT_TRUE(builder::choose_tactics(plan, cuda_config(), nullptr, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 1u);
}

// X [batch, 16] -> MatMul by W1 [16, 16] -> MatMul by W2 [16, 16] -> MatMul by W3 [16, 8]: the first
// two are the same problem, the third is not.
plan::PlanData three_matmul_plan(const TempDir& dir) {
  onnx::ModelProto m = testing::make_model(17);
  auto* g = m.mutable_graph();
  testing::add_input(g, "X", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{16}});
  testing::add_output(g, "Y", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{8}});
  *g->add_initializer() = testing::f32_raw("W1", {16, 16}, testing::random_floats(256, 1));
  *g->add_initializer() = testing::f32_raw("W2", {16, 16}, testing::random_floats(256, 2));
  *g->add_initializer() = testing::f32_raw("W3", {16, 8}, testing::random_floats(128, 3));
  testing::add_node(g, "MatMul", "mm1", {"X", "W1"}, {"H1"});
  testing::add_node(g, "MatMul", "mm2", {"H1", "W2"}, {"H2"});
  testing::add_node(g, "MatMul", "mm3", {"H2", "W3"}, {"Y"});
  const std::string path = dir.file("three_matmuls.onnx");
  testing::write_file(path, testing::serialize(m));
  BuilderConfig c;
  c.profiles["X"] = {{1, 16}, {4, 16}, {8, 16}};
  auto bytes = build_plan_from_onnx(path, c);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return testing::read_back(bytes.ok() ? *bytes : std::vector<uint8_t>{});
}

int64_t fake_record(const plan::PlanData& p, const std::string& node) {
  for (const ir::Node& s : p.steps)
    if (s.name == node) return s.has_attr("__fake") ? s.attrs.at("__fake").i : -1;
  ADD_FAILURE() << "no step " << node;
  return -1;
}

TEST_F(ChooseTactics, AStepLikeOneTimedBeforeTakesItsRecords) {
  plan::PlanData p = three_matmul_plan(dir);
  ASSERT_EQ(p.steps.size(), 3u);
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(p, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen, (std::vector<std::string>{"MatMul 4x16 16x16", "MatMul 4x16 16x8"}));
  EXPECT_EQ(fake_record(p, "mm1"), 1);
  EXPECT_EQ(fake_record(p, "mm2"), 1);  // mm1's timing, not timed again
  EXPECT_EQ(fake_record(p, "mm3"), 2);
  EXPECT_EQ(rep.steps_tuned, 3u);
  EXPECT_EQ(rep.steps_tuned_reused, 1u);
}

TEST_F(ChooseTactics, AnAttributeApartIsTimedAgain) {
  plan::PlanData p = three_matmul_plan(dir);
  ASSERT_EQ(p.steps.size(), 3u);
  for (ir::Node& s : p.steps)
    if (s.name == "mm2") s.attrs["transpose_hint"] = ir::Attribute::make_float(0.5f);
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(p, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 3u);
  EXPECT_EQ(rep.steps_tuned_reused, 0u);
  // TF32 marks are attributes too: with them every float32 MatMul is marked alike and shares again.
  plan::PlanData q = three_matmul_plan(dir);
  BuilderConfig c = cuda_config();
  c.allow_tf32 = true;
  tuner.seen.clear();
  ASSERT_TRUE(builder::choose_tactics(q, c, &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 2u);
  EXPECT_EQ(fake_record(q, "mm2"), fake_record(q, "mm1"));
}

TEST_F(ChooseTactics, AStepWithATensorAttributeIsNotShared) {
  plan::PlanData p = three_matmul_plan(dir);
  ASSERT_EQ(p.steps.size(), 3u);
  // The same tensor on mm1 and mm2: equal, but tensors are not compared, so each is timed.
  const Tensor t = Tensor::from_vector(DataType::kFloat32, {2}, std::vector<float>{1.f, 2.f});
  for (ir::Node& s : p.steps)
    if (s.name == "mm1" || s.name == "mm2") s.attrs["table"] = ir::Attribute::make_tensor(t);
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(p, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 3u);
  EXPECT_EQ(fake_record(p, "mm1"), 1);
  EXPECT_EQ(fake_record(p, "mm2"), 2);
  EXPECT_EQ(rep.steps_tuned_reused, 0u);
}

TEST_F(ChooseTactics, AFailedTimingIsNotShared) {
  plan::PlanData p = three_matmul_plan(dir);
  tuner.fail_op = "MatMul";
  BuildReport rep;
  ASSERT_TRUE(builder::choose_tactics(p, cuda_config(), &rep, &tuner).ok());
  EXPECT_EQ(tuner.seen.size(), 3u);  // mm2 is offered again: mm1's failure says nothing about it
  EXPECT_EQ(rep.steps_tuned, 0u);
}

TEST_F(ChooseTactics, StepsWithoutStaticShapesAtOptAreSkipped) {
  // A plan whose input has no opt dims left: X's dims stay dynamic.
  plan.inputs[0].opt.clear();
  ASSERT_TRUE(builder::choose_tactics(plan, cuda_config(), nullptr, &tuner).ok());
  EXPECT_TRUE(tuner.seen.empty());
  EXPECT_EQ(tuner.opened, 0);
}

}  // namespace
}  // namespace streamrt
