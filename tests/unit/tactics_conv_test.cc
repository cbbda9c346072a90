// Conv tactics on the host: the "__conv_algo" record's codec (round trip, documented layout,
// every malformed case), when a record applies, its description for `streamrt inspect`, its
// round trip through a plan (and plans with malformed records still running on the CPU), and
// several tuners of one device combined.
#include <gtest/gtest.h>

#include <algorithm>

#include "builder/tactics.h"
#include "conv_test_util.h"

namespace streamrt {
namespace {

using builder::ConvAlgoRecord;
using builder::ConvProblem;

ConvProblem sample_problem() {
  ConvProblem p;
  p.dtype = static_cast<int64_t>(DataType::kFloat16);
  p.group = 2;
  p.spatial = 2;
  p.x = {32, 64, 58, 56, 0};
  p.w = {128, 32, 3, 3, 0};
  p.pads = {0, 1, 0};
  p.strides = {1, 2, 0};
  p.dilations = {1, 1, 0};
  return p;
}

ConvAlgoRecord sample_record() {
  ConvAlgoRecord r;
  r.library_version = 91900;
  r.flags = builder::kConvAlgoTf32;
  r.algo = 1;
  r.math = 1;
  r.workspace = 1 << 20;
  r.problem = sample_problem();
  r.candidates = 4, r.rank = 2;
  r.best_ns = 12345, r.heuristic_ns = 15100;
  return r;
}

// Equal field for field: their encodings (whose layout the next test checks) are equal.
void expect_same(const ConvAlgoRecord& a, const ConvAlgoRecord& b) {
  EXPECT_EQ(builder::encode_conv_algo(a).ints, builder::encode_conv_algo(b).ints);
}

TEST(ConvTacticRecord, EncodesTheDocumentedLayoutAndRoundTrips) {
  const ConvAlgoRecord r = sample_record();
  const ir::Attribute a = builder::encode_conv_algo(r);
  ASSERT_EQ(a.kind, ir::Attribute::Kind::kInts);
  ASSERT_EQ(a.ints.size(), 32u);
  EXPECT_EQ(a.ints[0], 0x00314F474C415643LL);  // "CVALGO1"
  EXPECT_EQ(a.ints[1], 91900);
  EXPECT_EQ(a.ints[2], 1);
  EXPECT_EQ(a.ints[3], 1);
  EXPECT_EQ(a.ints[5], 1 << 20);
  EXPECT_EQ(a.ints[6], 2);  // float16
  EXPECT_EQ(a.ints[7], 2);
  EXPECT_EQ(a.ints[8], 2);
  EXPECT_EQ((std::vector<int64_t>(a.ints.begin() + 9, a.ints.begin() + 14)), (std::vector<int64_t>{32, 64, 58, 56, 0}));
  EXPECT_EQ((std::vector<int64_t>(a.ints.begin() + 14, a.ints.begin() + 19)), (std::vector<int64_t>{128, 32, 3, 3, 0}));
  EXPECT_EQ((std::vector<int64_t>(a.ints.begin() + 19, a.ints.begin() + 28)),
            (std::vector<int64_t>{0, 1, 0, 1, 2, 0, 1, 1, 0}));
  EXPECT_EQ(a.ints[28], 4);
  EXPECT_EQ(a.ints[29], 2);
  EXPECT_EQ(a.ints[30], 12345);
  EXPECT_EQ(a.ints[31], 15100);
  auto back = builder::decode_conv_algo(a);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same(*back, r);
  // A 3-D problem uses every slot.
  ConvAlgoRecord r3 = r;
  r3.problem.spatial = 3;
  r3.problem.x = {2, 64, 8, 9, 10};
  r3.problem.w = {16, 32, 3, 1, 2};
  r3.problem.pads = {1, 0, 2};
  r3.problem.strides = {1, 2, 3};
  r3.problem.dilations = {2, 1, 1};
  back = builder::decode_conv_algo(builder::encode_conv_algo(r3));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same(*back, r3);
}

TEST(ConvTacticRecord, MalformedRecordsAreInvalidPlanNamingTheProblem) {
  const ir::Attribute good = builder::encode_conv_algo(sample_record());
  auto expect_bad = [&](size_t at, int64_t value, const std::string& words) {
    ir::Attribute a = good;
    a.ints[at] = value;
    auto r = builder::decode_conv_algo(a);
    ASSERT_FALSE(r.ok()) << "[" << at << "] = " << value;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan);
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("__conv_algo"), std::string::npos) << r.status().message();
  };
  auto expect_bad_attr = [&](const ir::Attribute& a, const std::string& words) {
    auto r = builder::decode_conv_algo(a);
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan);
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().message();
  };
  expect_bad_attr(ir::Attribute::make_string("fast"), "is string, expected ints");
  expect_bad_attr(ir::Attribute::make_int(3), "is int, expected ints");
  expect_bad_attr(ir::Attribute::make_ints({}), "has 0 values, expected 32");
  ir::Attribute a = good;
  a.ints.pop_back();
  expect_bad_attr(a, "has 31 values, expected 32");
  a = good;
  a.ints.push_back(0);
  expect_bad_attr(a, "has 33 values, expected 32");
  // The lt record is not a conv record.
  expect_bad_attr(builder::encode_lt_algo(builder::LtAlgoRecord{}), "has 19 values");
  expect_bad(0, 0x00324F474C415643LL, "magic");  // "CVALGO2"
  expect_bad(1, 0, "cuDNN version 0");
  expect_bad(1, -3, "cuDNN version -3");
  expect_bad(2, 2, "unknown flags 2");
  expect_bad(2, -1, "unknown flags -1");
  expect_bad(3, -1, "algorithm -1 is out of range");
  expect_bad(3, 8, "algorithm 8 is out of range");
  expect_bad(4, 4, "math type 4 is out of range");
  expect_bad(4, -1, "math type -1");
  expect_bad(5, -1, "workspace -1 is negative");
  // The problem.
  expect_bad(6, 4, "data type 4 is not a float type");  // int64
  expect_bad(6, 0, "data type 0");
  expect_bad(6, 1000, "data type 1000");
  expect_bad(7, 0, "group 0");
  expect_bad(7, 3, "group 3 does not fit");  // 64 channels != 32 * 3
  expect_bad(8, 1, "1 spatial axes");
  expect_bad(8, 4, "4 spatial axes");
  expect_bad(8, 3, "do not have 5 positive dims");  // the fifth slots are 0
  expect_bad(9, 0, "positive dims");                // N
  expect_bad(12, -5, "positive dims");              // X's last spatial dim
  expect_bad(13, 7, "positive dims");               // an unused slot
  expect_bad(16, 0, "positive dims");               // W's first kernel dim
  expect_bad(18, 1, "positive dims");               // an unused W slot
  expect_bad(19, -1, "axis 0");                     // a negative pad
  expect_bad(23, 0, "axis 1");                      // stride 0
  expect_bad(25, 0, "axis 0");                      // dilation 0
  expect_bad(21, 1, "axis 2");                      // an unused pad slot
  // Candidates and times.
  expect_bad(28, 0, "inconsistent");
  expect_bad(29, 4, "inconsistent");  // rank == candidates
  expect_bad(29, -1, "inconsistent");
  expect_bad(30, -5, "inconsistent");
  expect_bad(31, -1, "inconsistent");
}

TEST(ConvTacticRecord, AppliesOnlyToTheSameCudnnFlagsAndProblem) {
  const ConvAlgoRecord r = sample_record();
  const ConvProblem p = sample_problem();
  EXPECT_TRUE(builder::conv_algo_applies(r, 91900, builder::kConvAlgoTf32, p));
  EXPECT_FALSE(builder::conv_algo_applies(r, 91901, builder::kConvAlgoTf32, p));
  EXPECT_FALSE(builder::conv_algo_applies(r, 91900, 0, p));
  auto differs = [&](auto edit) {
    ConvProblem q = p;
    edit(q);
    return !builder::conv_algo_applies(r, 91900, builder::kConvAlgoTf32, q);
  };
  EXPECT_TRUE(differs([](ConvProblem& q) { q.x[0] = 16; }));  // another batch (a dynamic profile)
  EXPECT_TRUE(differs([](ConvProblem& q) { q.dtype = static_cast<int64_t>(DataType::kFloat32); }));
  EXPECT_TRUE(differs([](ConvProblem& q) { q.group = 1; }));
  EXPECT_TRUE(differs([](ConvProblem& q) { q.w[3] = 1; }));
  EXPECT_TRUE(differs([](ConvProblem& q) { q.pads[0] = 1; }));
  EXPECT_TRUE(differs([](ConvProblem& q) { q.strides[1] = 1; }));
  EXPECT_TRUE(differs([](ConvProblem& q) { q.dilations[0] = 2; }));
}

TEST(ConvTacticRecord, DescribeForInspect) {
  ir::Node n;
  n.op_type = "Conv";
  n.attrs[builder::kConvAlgoAttr] = builder::encode_conv_algo(sample_record());
  n.attrs[builder::kTf32Attr] = ir::Attribute::make_int(1);
  EXPECT_EQ(builder::describe_tactics(n),
            "cuDNN conv algo: IMPLICIT_PRECOMP_GEMM, tensor-op math, #2 of 4, 12.3 us (#0: 15.1 us) at "
            "X 32x64x58x56 W 128x32x3x3 group 2, workspace 1048576 B, cuDNN 91900; tf32");
  n.attrs[builder::kConvAlgoAttr] = ir::Attribute::make_ints({1, 2, 3});
  const std::string d = builder::describe_tactics(n);
  EXPECT_NE(d.find("cuDNN conv algo: unreadable"), std::string::npos) << d;
  EXPECT_NE(d.find("the heuristic decides"), std::string::npos) << d;
}

// ---------------------------------------------------------------------------------------
// Plans carrying conv records

TEST(ConvTacticPlan, RecordsRoundTripAndMalformedOnesStillRunOnTheCpu) {
  const ir::Graph g = testing::conv_block_graph({.tail = testing::ConvTail::kAddRelu});
  auto bytes = testing::build_graph_plan(g, DeviceType::kCpu, true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const auto in = testing::block_inputs(g, 4);
  auto want = testing::run_graph_plan(DeviceType::kCpu, *bytes, in);
  ASSERT_TRUE(want.ok()) << want.status().to_string();

  plan::PlanData p = testing::read_back(*bytes);
  ir::Node* conv = testing::find_step(p, "Conv");
  ASSERT_NE(conv, nullptr);
  conv->attrs[builder::kConvAlgoAttr] = builder::encode_conv_algo(sample_record());
  testing::TempDir dir;
  const std::string path = dir.file("conv.plan");
  ASSERT_TRUE(plan::write_plan(p, path).ok());
  auto lp = plan::read_plan(path);
  ASSERT_TRUE(lp.ok()) << lp.status().to_string();
  ir::Node* back = testing::find_step(lp->data, "Conv");
  ASSERT_NE(back, nullptr);
  auto decoded = builder::decode_conv_algo(back->attrs.at(builder::kConvAlgoAttr));
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  expect_same(*decoded, sample_record());

  for (ir::Attribute bad : {ir::Attribute::make_ints({1, 2, 3}), ir::Attribute::make_string("fast please"),
                            builder::encode_conv_algo(sample_record())}) {
    conv->attrs[builder::kConvAlgoAttr] = bad;
    auto plan_bytes = plan::serialize_plan(p);
    ASSERT_TRUE(plan_bytes.ok()) << plan_bytes.status().to_string();
    auto got = testing::run_graph_plan(DeviceType::kCpu, std::move(plan_bytes).value(), in);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->to_float_vector().value(), want->to_float_vector().value());
  }
}

// ---------------------------------------------------------------------------------------
// Several tuners for one device

struct OpTuner : builder::TacticTuner {
  std::string op;              // the op its sessions tune
  std::vector<std::string>* log;
  bool fail_open = false;
  Status fail = ok_status();   // what its sessions' tune() returns for `op` when not ok
  OpTuner(std::string o, std::vector<std::string>* l) : op(std::move(o)), log(l) {}
  DeviceType device() const override { return DeviceType::kCuda; }
  Result<std::unique_ptr<builder::TacticSession>> open() override;
};

struct OpSession : builder::TacticSession {
  const OpTuner* tuner;
  explicit OpSession(const OpTuner* t) : tuner(t) {}
  Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo>) override {
    tuner->log->push_back(tuner->op + " saw " + step.op_type);
    if (step.op_type != tuner->op) return false;
    if (!tuner->fail.ok()) return tuner->fail;
    step.attrs["__by_" + tuner->op] = ir::Attribute::make_int(1);
    return true;
  }
};

Result<std::unique_ptr<builder::TacticSession>> OpTuner::open() {
  log->push_back(op + " opened");
  if (fail_open) return device_error("no device for " + op);
  return std::unique_ptr<builder::TacticSession>(std::make_unique<OpSession>(this));
}

TEST(CombinedTuners, EachStepGoesToEveryTunerUntilOneTunesIt) {
  std::vector<std::string> log;
  OpTuner gemm("MatMul", &log), conv("Conv", &log);
  auto both = builder::combine_tactic_tuners(DeviceType::kCuda, {&gemm, &conv});
  EXPECT_EQ(both->device(), DeviceType::kCuda);
  auto session = both->open();
  ASSERT_TRUE(session.ok());
  ir::Node mm, cv, relu;
  mm.op_type = "MatMul", cv.op_type = "Conv", relu.op_type = "Relu";
  EXPECT_TRUE((*session)->tune(mm, {}).value());
  EXPECT_TRUE((*session)->tune(cv, {}).value());
  EXPECT_FALSE((*session)->tune(relu, {}).value());
  EXPECT_TRUE(mm.has_attr("__by_MatMul"));
  EXPECT_TRUE(cv.has_attr("__by_Conv"));
  EXPECT_EQ(log, (std::vector<std::string>{"MatMul opened", "Conv opened", "MatMul saw MatMul", "MatMul saw Conv",
                                           "Conv saw Conv", "MatMul saw Relu", "Conv saw Relu"}));
  // A failure is the step's: it keeps the heuristic.
  conv.fail = unsupported("too large");
  ir::Node cv2;
  cv2.op_type = "Conv";
  auto r = (*session)->tune(cv2, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

TEST(CombinedTuners, ATunerThatCannotOpenIsLeftOut) {
  std::vector<std::string> log;
  OpTuner gemm("MatMul", &log), conv("Conv", &log);
  gemm.fail_open = true;
  auto both = builder::combine_tactic_tuners(DeviceType::kCuda, {&gemm, &conv});
  auto session = both->open();
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  ir::Node cv;
  cv.op_type = "Conv";
  EXPECT_TRUE((*session)->tune(cv, {}).value());
  conv.fail_open = true;
  auto none = both->open();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kDeviceError);
}

// choose_tactics with a combined tuner tunes the Conv of a real plan at its opt shapes, when conv
// tactics are on (BuilderPasses::conv_tactics); off, the default, Conv steps are not offered.
TEST(CombinedTuners, ChooseTacticsOffersConvStepsWithTheirShapes) {
  const ir::Graph g = testing::conv_block_graph({.bias = false, .tail = testing::ConvTail::kAddRelu});
  auto bytes = testing::build_graph_plan(g, DeviceType::kCpu, true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  for (bool conv_tactics : {true, false}) {
    SCOPED_TRACE(conv_tactics ? "conv tactics on" : "conv tactics off");
    plan::PlanData p = testing::read_back(*bytes);
    std::vector<std::string> log;
    OpTuner gemm("MatMul", &log), conv("Conv", &log);
    auto both = builder::combine_tactic_tuners(DeviceType::kCuda, {&gemm, &conv});
    BuilderConfig c;
    c.device = DeviceType::kCuda;
    c.passes.conv_tactics = conv_tactics;
    BuildReport rep;
    ASSERT_TRUE(builder::choose_tactics(p, c, &rep, both.get()).ok());
    EXPECT_EQ(rep.steps_tuned, conv_tactics ? 1u : 0u);
    EXPECT_EQ(testing::find_step(p, "Conv")->has_attr("__by_Conv"), conv_tactics);
    EXPECT_EQ(std::count(log.begin(), log.end(), "Conv saw Conv"), conv_tactics ? 1 : 0);
  }
}

}  // namespace
}  // namespace streamrt
