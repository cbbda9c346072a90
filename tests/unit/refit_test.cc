// Refitter: weights by name on loaded engines (streaming too) and plan files; checks, all at
// once, stripped plans, shape weights.
#include "streamrt/refit.h"

#include <gtest/gtest.h>

#include "cache_test_util.h"
#include "plan/plan.h"

namespace streamrt {
namespace {

using testing::GemmModel;
using testing::TempDir;

std::vector<uint8_t> build(GemmModel& m, const TempDir& dir, const std::string& name, BuilderConfig c) {
  m.write(dir.file(name));
  auto bytes = build_plan_from_onnx(dir.file(name), c);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

std::unique_ptr<Refitter> refitter_for(std::shared_ptr<Engine> e) {
  auto r = Refitter::create(std::move(e));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

Status set(Refitter& r, const std::string& name, const std::vector<float>& v, const Dims& dims) {
  return r.set_weights(name, DataType::kFloat32, dims, v.data(), v.size() * sizeof(float));
}

// An engine of `a`, and `b`'s weights made (seed `b_seed`).
std::shared_ptr<Engine> engine_and_other(const TempDir& dir, GemmModel& a, GemmModel& b, uint32_t b_seed) {
  b.seed = b_seed;
  b.make();
  return testing::load_cpu(build(a, dir, "a.onnx", testing::batch_config(a.in)));
}

TEST(Refit, EngineWeightsByNameChangeTheOutputs) {
  TempDir dir;
  GemmModel a, b;
  auto engine = engine_and_other(dir, a, b, 5);
  ASSERT_TRUE(engine);
  const std::vector<float> x = testing::ramp(2 * a.in);
  testing::expect_near(testing::run_engine(*engine, x, 2, a.in, a.out), a.reference(x, 2));

  auto r = refitter_for(engine);
  auto ws = r->weights();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].name, "W");
  EXPECT_EQ(ws[0].dims, (Dims{3, 4}));
  EXPECT_TRUE(ws[0].present);
  EXPECT_FALSE(ws[0].shape_input);
  EXPECT_TRUE(r->missing_weights().empty());
  ASSERT_TRUE(set(*r, "W", b.w, {3, 4}).ok());
  ASSERT_TRUE(set(*r, "B", b.b, {3}).ok());
  EXPECT_EQ(r->num_staged(), 2u);
  // Staged, not applied yet.
  testing::expect_near(testing::run_engine(*engine, x, 2, a.in, a.out), a.reference(x, 2));
  ASSERT_TRUE(r->refit().ok());
  EXPECT_EQ(r->num_staged(), 0u);
  testing::expect_near(testing::run_engine(*engine, x, 2, b.in, b.out), b.reference(x, 2));
}

TEST(Refit, EveryNameDtypeDimsAndSizeIsChecked) {
  TempDir dir;
  GemmModel a;
  auto engine = testing::load_cpu(build(a, dir, "a.onnx", testing::batch_config(a.in)));
  auto r = refitter_for(engine);
  std::vector<float> w(12, 1.f);
  Status st = set(*r, "nope", w, {3, 4});
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("has no weight 'nope'"), std::string::npos) << st.message();
  st = set(*r, "W", w, {4, 3});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("weight 'W' is float32 3x4, got float32 4x3"), std::string::npos) << st.message();
  std::vector<uint16_t> half(12);
  st = r->set_weights("W", DataType::kFloat16, {3, 4}, half.data(), 24);
  EXPECT_NE(st.message().find("got float16 3x4"), std::string::npos) << st.message();
  st = r->set_weights("W", DataType::kFloat32, {3, 4}, w.data(), 40);
  EXPECT_NE(st.message().find("needs 48 bytes, got 40"), std::string::npos) << st.message();
  st = r->set_weights("W", DataType::kFloat32, {3, 4}, nullptr, 48);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->num_staged(), 0u);  // nothing bad was staged
}

TEST(Refit, NeedsNoLiveExecutionContext) {
  TempDir dir;
  GemmModel a, b;
  auto engine = engine_and_other(dir, a, b, 3);
  auto r = refitter_for(engine);
  ASSERT_TRUE(set(*r, "W", b.w, {3, 4}).ok());
  {
    auto ctx = engine->create_execution_context();
    ASSERT_TRUE(ctx.ok());
    Status st = r->refit();
    EXPECT_EQ(st.code(), StatusCode::kInvalidState);
    EXPECT_NE(st.message().find("no execution context"), std::string::npos) << st.message();
    EXPECT_EQ(r->num_staged(), 1u);  // kept for a later refit()
  }
  EXPECT_TRUE(r->refit().ok());
}

TEST(Refit, StrippedEngineRunsOnlyOnceEveryWeightWasSupplied) {
  TempDir dir;
  GemmModel a;
  BuilderConfig c = testing::batch_config(a.in);
  c.strip_weights = true;
  auto bytes = build(a, dir, "a.onnx", c);
  auto read = plan::read_plan_bytes(bytes.data(), bytes.size(), nullptr);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->data.weights_stripped);
  auto engine = testing::load_cpu(bytes);
  ASSERT_TRUE(engine);
  EXPECT_TRUE(engine->weights_stripped());
  auto ctx = engine->create_execution_context();
  EXPECT_EQ(ctx.status().code(), StatusCode::kInvalidState);

  auto r = refitter_for(engine);
  EXPECT_FALSE(r->weights()[0].present);
  EXPECT_EQ(r->missing_weights(), (std::vector<std::string>{"W", "B"}));
  ASSERT_TRUE(set(*r, "W", a.w, {3, 4}).ok());
  EXPECT_EQ(r->missing_weights(), std::vector<std::string>{"B"});
  ASSERT_TRUE(r->refit().ok());  // partial: still stripped
  EXPECT_TRUE(engine->weights_stripped());
  EXPECT_EQ(engine->create_execution_context().status().code(), StatusCode::kInvalidState);
  ASSERT_TRUE(set(*r, "B", a.b, {3}).ok());
  ASSERT_TRUE(r->refit().ok());
  EXPECT_FALSE(engine->weights_stripped());
  const std::vector<float> x = testing::ramp(4 * a.in);
  testing::expect_near(testing::run_engine(*engine, x, 4, a.in, a.out), a.reference(x, 4));
}

// A plan mapped from a file, every streamable weight streamed (budget 0): the refitted values
// are the ones streamed.
TEST(Refit, StreamingEngine) {
  TempDir dir;
  GemmModel a, b;
  a.in = b.in = 256;
  a.out = b.out = 128;  // 128 KiB of W: streamable
  b.seed = 11;
  BuilderConfig c = testing::batch_config(a.in);
  c.weight_streaming = true;
  b.write(dir.file("b.onnx"));
  auto bytes = build(a, dir, "a.onnx", c);
  testing::write_file(dir.file("a.plan"), std::string(bytes.begin(), bytes.end()));
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto engine = (*Runtime::create(cpu))->load_engine(dir.file("a.plan"));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  ASSERT_GT((*engine)->streamable_weights_size(), 0u);
  ASSERT_TRUE((*engine)->set_weight_streaming_budget(0).ok());
  auto r = refitter_for(*engine);
  ASSERT_TRUE(r->set_weights_from_onnx(dir.file("b.onnx")).ok());
  ASSERT_TRUE(r->refit().ok());
  const std::vector<float> x = testing::ramp(2 * a.in, 0.01f);
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  std::vector<float> xin = x, y(2 * b.out);
  ASSERT_TRUE((*ctx)->set_input_shape("x", {2, a.in}).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("x", xin.data(), xin.size() * 4).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("y", y.data(), y.size() * 4).ok());
  ASSERT_TRUE((*ctx)->execute().ok());
  testing::expect_near(y, b.reference(x, 2), 1e-4f);
  auto stats = (*ctx)->last_run_stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->bytes_streamed, 128u * 256 * 4);  // W was streamed
}

TEST(Refit, PlanFileFromOnnxEqualsADirectBuild) {
  TempDir dir;
  GemmModel a, b;
  b.seed = 21;
  BuilderConfig c = testing::batch_config(a.in);
  c.strip_weights = true;
  auto stripped = build(a, dir, "a.onnx", c);
  testing::write_file(dir.file("a.plan"), std::string(stripped.begin(), stripped.end()));
  c.strip_weights = false;
  auto direct_b = build(b, dir, "b.onnx", c);

  auto r = Refitter::open_plan(dir.file("a.plan"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->write_plan(dir.file("out.plan")).code(), StatusCode::kInvalidState);  // weights missing
  ASSERT_TRUE((*r)->set_weights_from_onnx(dir.file("b.onnx")).ok());
  Status st = (*r)->write_plan(dir.file("out.plan"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidState);  // staged, not applied
  EXPECT_NE(st.message().find("call refit()"), std::string::npos);
  ASSERT_TRUE((*r)->refit().ok());
  ASSERT_TRUE((*r)->write_plan(dir.file("out.plan")).ok());
  auto mapped = plan::read_plan(dir.file("out.plan"));
  ASSERT_TRUE(mapped.ok());
  std::vector<uint8_t> out(static_cast<const uint8_t*>(mapped->mapping.get()),
                           static_cast<const uint8_t*>(mapped->mapping.get()) + mapped->file_size);
  EXPECT_EQ(out, direct_b);
}

TEST(Refit, ReducedPrecisionPlanFromOnnx) {
  TempDir dir;
  GemmModel a, b;
  b.seed = 8;
  BuilderConfig c = testing::batch_config(a.in);
  c.float_precision = DataType::kFloat16;
  auto plan_a = build(a, dir, "a.onnx", c);
  auto direct_b = build(b, dir, "b.onnx", c);
  auto engine = testing::load_cpu(plan_a);
  auto r = refitter_for(engine);
  EXPECT_EQ(r->weights()[0].dtype, DataType::kFloat16);
  ASSERT_TRUE(r->set_weights_from_onnx(dir.file("b.onnx")).ok());
  ASSERT_TRUE(r->refit().ok());
  const std::vector<float> x = testing::ramp(2 * a.in);
  testing::expect_near(testing::run_engine(*engine, x, 2, a.in, a.out),
                       testing::run_plan(direct_b, x, 2, b.in, b.out), 0.f);
}

TEST(Refit, FromOnnxOfAnotherArchitectureStagesNothing) {
  TempDir dir;
  GemmModel a, renamed, wide, sigmoid;
  renamed.b_name = "bias";
  wide.out = 5;
  sigmoid.relu = false;
  renamed.write(dir.file("renamed.onnx"));
  wide.write(dir.file("wide.onnx"));
  sigmoid.write(dir.file("sigmoid.onnx"));
  auto engine = testing::load_cpu(build(a, dir, "a.onnx", testing::batch_config(a.in)));
  auto r = refitter_for(engine);
  Status st = r->set_weights_from_onnx(dir.file("renamed.onnx"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("plan weight 'B' (float32 3) is not a weight of"), std::string::npos) << st.message();
  st = r->set_weights_from_onnx(dir.file("wide.onnx"));
  EXPECT_NE(st.message().find("plan weight 'W' is float32 3x4, in"), std::string::npos) << st.message();
  st = r->set_weights_from_onnx(dir.file("sigmoid.onnx"));
  EXPECT_NE(st.message().find("does not have the plan's structure: step 1"), std::string::npos) << st.message();
  st = r->set_weights_from_onnx(dir.file("missing.onnx"));
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(r->num_staged(), 0u);
}

// y = Reshape(x + W, S): S is read as a shape. Its value is structure.
TEST(Refit, ShapeWeightsCannotChange) {
  using namespace testing;
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{6}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{2}, int64_t{3}});
  *g->add_initializer() = f32_raw("W", {6}, {1, 2, 3, 4, 5, 6});
  onnx::TensorProto s;
  s.set_name("S");
  s.set_data_type(onnx::TensorProto_DataType_INT64);
  s.add_dims(3);
  for (int64_t v : {-1, 2, 3}) s.add_int64_data(v);
  *g->add_initializer() = s;
  add_node(g, "Add", "add", {"x", "W"}, {"s"});
  add_node(g, "Reshape", "reshape", {"s", "S"}, {"y"});
  write_file(dir.file("r.onnx"), serialize(m));
  BuilderConfig c;
  c.profiles["x"] = {{1, 6}, {2, 6}, {4, 6}};
  auto bytes = build_plan_from_onnx(dir.file("r.onnx"), c);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto r = refitter_for(load_cpu(*bytes));
  auto ws = r->weights();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_TRUE(ws[1].shape_input);
  std::vector<int64_t> same = {-1, 2, 3}, other = {-1, 3, 2};
  EXPECT_TRUE(r->set_weights("S", DataType::kInt64, {3}, same.data(), 24).ok());
  Status st = r->set_weights("S", DataType::kInt64, {3}, other.data(), 24);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("read as a shape"), std::string::npos) << st.message();
}

TEST(Refit, WritePlanIsForPlanRefitters) {
  TempDir dir;
  GemmModel a;
  auto r = refitter_for(testing::load_cpu(build(a, dir, "a.onnx", testing::batch_config(a.in))));
  EXPECT_EQ(r->write_plan(dir.file("x.plan")).code(), StatusCode::kInvalidState);
  EXPECT_EQ(Refitter::create(nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Refitter::open_plan(dir.file("none.plan")).status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace streamrt
