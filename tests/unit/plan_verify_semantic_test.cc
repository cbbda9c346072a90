// The plan loader against crafted plans: well-formed files (checksums right, FlatBuffers
// valid) whose steps or memory plan would make a kernel allocate far beyond the plan's
// declared memory or touch bytes outside its buffers. Each is a small valid plan with one
// field changed, serialized as the writer does, and must be rejected at load naming the step
// or value and the field; the unchanged plan loads and runs.
#include <gtest/gtest.h>

#include <vector>

#include "plan/plan.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

using plan::ValueEntry;

ValueEntry value(std::string name, Dims dims, ValueEntry::Kind kind, DataType t = DataType::kFloat32) {
  ValueEntry v;
  v.name = std::move(name);
  v.dtype = t;
  v.max_dims = dims;
  v.dims = std::move(dims);
  v.kind = kind;
  return v;
}

ValueEntry activation(std::string name, Dims dims, uint64_t offset) {
  ValueEntry v = value(std::move(name), std::move(dims), ValueEntry::Kind::kActivation);
  v.arena_offset = offset;
  v.arena_size = static_cast<uint64_t>(dims_numel(v.dims)) * 4;
  return v;
}

ir::Node step(std::string name, std::string op, std::vector<int32_t> in, std::vector<int32_t> out) {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

plan::IoTensor io(const std::string& name, int32_t v, const Dims& dims, bool input) {
  plan::IoTensor t{name, v, DataType::kFloat32, dims, {}, {}, {}};
  t.max = dims;
  if (input) t.min = t.opt = dims;
  return t;
}

void add_weight(plan::PlanData& p, const std::string& name, Tensor t) {
  ValueEntry v = value(name, t.dims(), ValueEntry::Kind::kWeight, t.dtype());
  v.weight_index = static_cast<int32_t>(p.weights.size());
  p.values.push_back(v);
  p.weights.push_back({name, t.dtype(), t.dims(), 0, t.nbytes(), false});
  p.weight_data.push_back(std::move(t));
}

// x [1,1,4,4] -> Conv 3x3 (pads 1) -> t [1,1,4,4] (arena) -> Relu -> y.
plan::PlanData conv_plan() {
  plan::PlanData p;
  p.name = "conv";
  p.values.push_back(value("x", {1, 1, 4, 4}, ValueEntry::Kind::kInput));
  p.values.push_back(activation("t", {1, 1, 4, 4}, 0));
  p.values.push_back(value("y", {1, 1, 4, 4}, ValueEntry::Kind::kOutput));
  add_weight(p, "w", Tensor::from_vector<float>(DataType::kFloat32, {1, 1, 3, 3}, std::vector<float>(9, 1.f)));
  ir::Node conv = step("conv", "Conv", {0, 3}, {1});
  conv.opset = 11;
  conv.attrs["pads"] = ir::Attribute::make_ints({1, 1, 1, 1});
  conv.attrs["kernel_shape"] = ir::Attribute::make_ints({3, 3});
  p.steps = {conv, step("relu", "Relu", {1}, {2})};
  p.arena_size = 64;
  p.inputs = {io("x", 0, {1, 1, 4, 4}, true)};
  p.outputs = {io("y", 2, {1, 1, 4, 4}, false)};
  return p;
}

// x [2,3] -> Relu a -> Relu b -> Add(a, b) s -> Transpose t [3,2] -> Gather(t, [1], axis 0) y.
// a and b are alive together (steps 0..2 and 1..2); t reuses a's bytes once a is dead.
plan::PlanData chain_plan() {
  plan::PlanData p;
  p.name = "chain";
  p.values.push_back(value("x", {2, 3}, ValueEntry::Kind::kInput));
  p.values.push_back(activation("a", {2, 3}, 0));
  p.values.push_back(activation("b", {2, 3}, 64));
  p.values.push_back(activation("s", {2, 3}, 128));
  p.values.push_back(activation("t", {3, 2}, 0));
  p.values.push_back(value("y", {1, 2}, ValueEntry::Kind::kOutput));
  add_weight(p, "idx", Tensor::from_vector<int64_t>(DataType::kInt64, {1}, {1}));
  ir::Node tr = step("transpose", "Transpose", {3}, {4});
  tr.attrs["perm"] = ir::Attribute::make_ints({1, 0});
  ir::Node gather = step("gather", "Gather", {4, 6}, {5});
  gather.attrs["axis"] = ir::Attribute::make_int(0);
  p.steps = {step("relu_a", "Relu", {0}, {1}), step("relu_b", "Relu", {1}, {2}), step("add", "Add", {1, 2}, {3}), tr,
             gather};
  p.arena_size = 192;
  p.inputs = {io("x", 0, {2, 3}, true)};
  p.outputs = {io("y", 5, {1, 2}, false)};
  return p;
}

Result<plan::LoadedPlan> load(plan::PlanData p) {
  SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, plan::serialize_plan(p));
  auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return plan::read_plan_bytes(holder->data(), holder->size(), holder);
}

// Rejected as an invalid plan, the message holding every one of `parts`.
void expect_rejected(plan::PlanData p, std::vector<std::string> parts) {
  auto r = load(std::move(p));
  ASSERT_FALSE(r.ok()) << "the plan loaded";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan) << r.status().message();
  for (const auto& part : parts) EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
}

// Loads and runs `p` on the CPU with input x of `in` (ones) and returns output y.
std::vector<float> run(plan::PlanData p, const Dims& in, size_t out_elems) {
  auto bytes = plan::serialize_plan(p);
  EXPECT_TRUE(bytes.ok());
  auto rt = Runtime::create({DeviceType::kCpu});
  EXPECT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(*bytes));
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  if (!engine.ok()) return {};
  auto ctx = (*engine)->create_execution_context().value();
  std::vector<float> x(static_cast<size_t>(dims_numel(in)), 1.f), y(out_elems, -1.f);
  EXPECT_TRUE(ctx->set_input_shape("x", in).ok());
  EXPECT_TRUE(ctx->set_tensor_address("x", x.data(), x.size() * 4).ok());
  EXPECT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 4).ok());
  Status st = ctx->execute();
  EXPECT_TRUE(st.ok()) << st.message();
  return y;
}

TEST(PlanVerifySemantic, UnchangedPlansLoadAndRun) {
  ASSERT_TRUE(load(conv_plan()).ok()) << load(conv_plan()).status().message();
  ASSERT_TRUE(load(chain_plan()).ok()) << load(chain_plan()).status().message();
  // 3x3 box sum of ones with zero padding: 4 in the corners, 6 on the edges, 9 inside.
  std::vector<float> y = run(conv_plan(), {1, 1, 4, 4}, 16);
  EXPECT_EQ(y, (std::vector<float>{4, 6, 6, 4, 6, 9, 9, 6, 6, 9, 9, 6, 4, 6, 6, 4}));
  // relu(1) + relu(relu(1)) = 2 everywhere; row 1 of the transpose.
  EXPECT_EQ(run(chain_plan(), {2, 3}, 2), (std::vector<float>{2, 2}));
}

TEST(PlanVerifySemantic, ConvPadOfFifteenMillionIsRejected) {
  plan::PlanData p = conv_plan();
  p.steps[0].attrs["pads"] = ir::Attribute::make_ints({15000000, 1, 1, 1});
  expect_rejected(p, {"step 0 'conv'", "pads"});
  // Within the explicit bound but still far more than the plan's memory for t.
  p.steps[0].attrs["pads"] = ir::Attribute::make_ints({3, 1, 1, 1});
  expect_rejected(p, {"step 0 'conv'", "'t'", "[1, 1, 6, 4]"});
  p.steps[0].attrs["pads"] = ir::Attribute::make_ints({-1, 1, 1, 1});
  expect_rejected(p, {"step 0 'conv'", "pads"});
  p = conv_plan();
  p.steps[0].attrs["strides"] = ir::Attribute::make_ints({0, 1});
  expect_rejected(p, {"step 0 'conv'", "strides"});
  p.steps[0].attrs["strides"] = ir::Attribute::make_ints({1, 1});
  p.steps[0].attrs["dilations"] = ir::Attribute::make_ints({INT64_MAX / 2, 1});
  expect_rejected(p, {"step 0 'conv'", "dilations"});
}

TEST(PlanVerifySemantic, RecordedSizesMustHoldWhatTheStepsMake) {
  plan::PlanData p = conv_plan();
  // The arena slot and the plan's dims say [1,1,2,2]: the step would write 64 bytes into 16.
  p.values[1].dims = p.values[1].max_dims = {1, 1, 2, 2};
  p.values[1].arena_size = 16;
  expect_rejected(p, {"step 0 'conv'", "output 0 't'", "[1, 1, 4, 4]"});
  p = conv_plan();
  p.values[1].arena_size = 32;  // max_dims kept, slot too small: the structural check
  expect_rejected(p, {"value 1 't'", "reserves 32"});
  p = conv_plan();
  p.values[1].max_dims = {};  // no max dims: the step's own size must still fit
  p.values[1].arena_size = 32;
  expect_rejected(p, {"step 0 'conv'", "max_dims"});
}

TEST(PlanVerifySemantic, MisalignedActivationIsRejected) {
  plan::PlanData p = chain_plan();
  p.values[1].arena_offset = 127;
  p.arena_size = 256;
  expect_rejected(p, {"value 1 'a'", "arena_offset 127", "aligned"});
}

TEST(PlanVerifySemantic, LiveActivationsMustNotOverlap) {
  plan::PlanData p = chain_plan();
  p.values[2].arena_offset = 0;  // b onto a while both are alive
  expect_rejected(p, {"'a'", "'b'", "overlapping"});
  p = chain_plan();
  p.values[3].arena_offset = 64;  // s (made at step 2) onto b (read at step 2)
  expect_rejected(p, {"'b'", "'s'", "overlapping"});
  // t shares a's bytes, but a is dead by then: that is the memory plan, not a clash.
  p = chain_plan();
  p.values[4].arena_offset = 64;  // t onto b: b's last reader is step 2, t is made at 3
  EXPECT_TRUE(load(p).ok()) << load(p).status().message();
}

TEST(PlanVerifySemantic, ViewOfALiveActivationMayShareItsBytes) {
  // x -> Relu a -> Reshape(a, [3,2]) r (same slot: a view) -> Relu y; a and r alive together.
  plan::PlanData p;
  p.name = "view";
  p.values.push_back(value("x", {2, 3}, ValueEntry::Kind::kInput));
  p.values.push_back(activation("a", {2, 3}, 0));
  p.values.push_back(activation("r", {3, 2}, 0));
  p.values.push_back(value("y", {3, 2}, ValueEntry::Kind::kOutput));
  add_weight(p, "shape", Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {3, 2}));
  ir::Node reshape = step("reshape", "Reshape", {1, 4}, {2});
  reshape.opset = 14;
  ir::Node add = step("add", "Add", {2, 2}, {3});
  p.steps = {step("relu", "Relu", {0}, {1}), reshape, add};
  p.arena_size = 64;
  p.inputs = {io("x", 0, {2, 3}, true)};
  p.outputs = {io("y", 3, {3, 2}, false)};
  ASSERT_TRUE(load(p).ok()) << load(p).status().message();
  EXPECT_EQ(run(p, {2, 3}, 6), std::vector<float>(6, 2.f));
  // The same sharing by a step that is not a view reads and writes one buffer: rejected.
  p.steps[1] = step("relu2", "Relu", {1}, {2});
  p.values[2].dims = p.values[2].max_dims = {2, 3};
  p.values[3].dims = p.values[3].max_dims = p.outputs[0].dims = p.outputs[0].max = {2, 3};
  expect_rejected(p, {"'a'", "'r'", "overlapping"});
}

TEST(PlanVerifySemantic, TransposePermOutOfRangeIsRejected) {
  plan::PlanData p = chain_plan();
  p.steps[3].attrs["perm"] = ir::Attribute::make_ints({2, 0});
  expect_rejected(p, {"step 3 'transpose'", "perm"});
  p.steps[3].attrs["perm"] = ir::Attribute::make_ints({0, 0});
  expect_rejected(p, {"step 3 'transpose'", "perm"});
}

TEST(PlanVerifySemantic, GatherAxisOutOfRangeIsRejected) {
  plan::PlanData p = chain_plan();
  p.steps[4].attrs["axis"] = ir::Attribute::make_int(5);
  expect_rejected(p, {"step 4 'gather'", "axis"});
  p.steps[4].attrs["axis"] = ir::Attribute::make_int(-3);
  expect_rejected(p, {"step 4 'gather'", "axis"});
}

// Found by plan_run_fuzz: an Identity step of a weight with no outputs was evaluated at load (its
// input is known), and the kernel wrote an output that did not exist.
TEST(PlanVerifySemantic, StepWithoutItsFirstOutputIsRejected) {
  for (std::vector<int32_t> outs : {std::vector<int32_t>{}, std::vector<int32_t>{ir::kNoValue}}) {
    plan::PlanData p = chain_plan();
    p.steps.push_back(step("ident", "Identity", {6}, outs));
    expect_rejected(p, {"'ident'", "no first output"});
  }
}

// Found by plan_run_fuzz: an output value the plan did not list got no buffer, and the step
// writing it wrote through a null pointer.
TEST(PlanVerifySemantic, EveryInputAndOutputValueIsListed) {
  plan::PlanData p = chain_plan();
  p.outputs.clear();
  expect_rejected(p, {"value 5 'y'", "output the plan does not list"});
  p = chain_plan();
  p.outputs.push_back(p.outputs[0]);
  expect_rejected(p, {"output 'y'", "listed twice"});
  p = chain_plan();
  p.outputs[0].value = 0;  // the input value
  p.outputs[0].dims = p.outputs[0].max = {2, 3};
  expect_rejected(p, {"output 'y'", "not an output value"});
}

TEST(PlanVerifySemantic, OutputDtypeMustBeWhatTheStepMakes) {
  plan::PlanData p = chain_plan();
  p.values[3].dtype = DataType::kFloat16;  // s: Add of two float32 tensors
  p.values[3].arena_size = 12;
  expect_rejected(p, {"step 2 'add'", "'s'", "float32"});
}

}  // namespace
}  // namespace streamrt
