// The in-place KV cache (BuilderConfig::kv_cache_in_place, builder/kv_cache.cc): which pairs the
// builder stores with a capacity, what the plan records (TensorDesc::seq_capacity, KvAppend steps,
// Attention's kv_capacity), that a decode loop over such a plan gives exactly the dense plan's
// outputs however the caller binds the cache, and that the plan verifier refuses capacity layouts
// that do not add up (plan/capacity_layout.h).
#include <gtest/gtest.h>

#include <cstring>

#include "kv_cache_test_util.h"
#include "plan/plan.h"

namespace streamrt::testing {
namespace {

plan::PlanData read(const std::vector<uint8_t>& bytes) {
  auto holder = std::make_shared<std::vector<uint8_t>>(bytes);
  auto p = plan::read_plan_bytes(holder->data(), holder->size(), holder);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? p->data : plan::PlanData{};
}

const plan::IoTensor& io_named(const plan::PlanData& p, const std::string& name) {
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const plan::IoTensor& io : *list)
      if (io.name == name) return io;
  ADD_FAILURE() << "no I/O tensor " << name;
  return p.inputs.front();
}

plan::IoTensor& io_named(plan::PlanData& p, const std::string& name) {
  return const_cast<plan::IoTensor&>(io_named(static_cast<const plan::PlanData&>(p), name));
}

TEST(KvCacheInPlace, PlanStoresThePairsWithTheirCapacity) {
  BuildReport rep;
  auto bytes = build_tiny_kv(DeviceType::kCpu, true, &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 2u);
  EXPECT_EQ(rep.kv_capacity, kTinyCapacity);
  const plan::PlanData p = read(*bytes);
  for (const char* name : {"past_key", "past_value", "present_key", "present_value"}) {
    EXPECT_EQ(io_named(p, name).seq_capacity, kTinyCapacity) << name;
    EXPECT_EQ(io_named(p, name).seq_axis, 2) << name;
  }
  for (const char* name : {"query", "key", "value", "y"}) EXPECT_EQ(io_named(p, name).seq_capacity, 0) << name;
  size_t appends = 0;
  for (const ir::Node& s : p.steps) {
    EXPECT_NE(s.op_type, "Concat") << "the cache is still copied by step " << s.name;
    if (s.op_type == "KvAppend") {
      ++appends;
      EXPECT_EQ(s.attr_int("capacity").value(), kTinyCapacity);
      EXPECT_EQ(s.attr_int("axis").value(), 2);
    }
    if (s.op_type == "Attention") EXPECT_EQ(s.attr_int("kv_capacity").value(), kTinyCapacity);
  }
  EXPECT_EQ(appends, 2u);
  // The public description says the same.
  auto rt = Runtime::create({DeviceType::kCpu});
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(*bytes);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  for (const TensorDesc& d : (*engine)->io_tensors()) {
    const bool cache = d.name.find("past") == 0 || d.name.find("present") == 0;
    EXPECT_EQ(d.seq_capacity, cache ? kTinyCapacity : 0) << d.name;
    const Dims five = {1, 2, 5, kTinyDim};
    EXPECT_EQ(d.storage_bytes(five), (cache ? 2 * kTinyCapacity * kTinyDim : 2 * 5 * kTinyDim) * 4u) << d.name;
  }
}

TEST(KvCacheInPlace, DenseBuildKeepsTheConcat) {
  BuildReport rep;
  auto bytes = build_tiny_kv(DeviceType::kCpu, false, &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 0u);
  const plan::PlanData p = read(*bytes);
  size_t concats = 0;
  for (const ir::Node& s : p.steps) concats += s.op_type == "Concat";
  EXPECT_EQ(concats, 2u);
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const plan::IoTensor& io : *list) EXPECT_EQ(io.seq_capacity, 0) << io.name;
}

void expect_same_run(const TinyDecodeRun& a, const TinyDecodeRun& b) {
  ASSERT_EQ(a.ys.size(), b.ys.size());
  for (size_t s = 0; s < a.ys.size(); ++s) {
    ASSERT_EQ(a.ys[s].nbytes(), b.ys[s].nbytes());
    EXPECT_EQ(std::memcmp(a.ys[s].data(), b.ys[s].data(), a.ys[s].nbytes()), 0) << "step " << s;
  }
  for (const auto& [name, t] : a.presents) {
    ASSERT_EQ(t.dims(), b.presents.at(name).dims()) << name;
    EXPECT_EQ(std::memcmp(t.data(), b.presents.at(name).data(), t.nbytes()), 0) << name;
  }
}

// The same kernels over the same positions: bit for bit the dense plan's results, whether the caller
// binds one buffer to past and present (only new rows written), two that swap, or fresh copies.
TEST(KvCacheInPlace, DecodeLoopMatchesTheDensePlan) {
  for (TinyKv t : {TinyKv{}, TinyKv{DataType::kFloat16, 64}}) {
    SCOPED_TRACE(dtype_name(t.dtype));
    auto dense = build_tiny_kv(DeviceType::kCpu, false, nullptr, t);
    auto in_place = build_tiny_kv(DeviceType::kCpu, true, nullptr, t);
    ASSERT_TRUE(dense.ok() && in_place.ok());
    auto want = run_tiny_decode(DeviceType::kCpu, *dense, CacheBinding::kHostRoundTrip, t);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    for (CacheBinding b : {CacheBinding::kOneBuffer, CacheBinding::kTwoBuffers, CacheBinding::kHostRoundTrip}) {
      SCOPED_TRACE("binding " + std::to_string(static_cast<int>(b)));
      auto got = run_tiny_decode(DeviceType::kCpu, *in_place, b, t);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      expect_same_run(*want, *got);
    }
  }
}

// A present that something besides attention reads (here: it is also fed to a Relu output) keeps
// its Concat; the Attention reading it as K cannot then take a capacity for V alone, so that pair
// stays dense too. A past read only for its dims (Shape) does not stop a pair.
TEST(KvCacheInPlace, PairsWithOtherReadersStayDense) {
  ir::Graph g = tiny_kv_graph();
  const ir::ValueId relu = g.add_value("relu_out");
  ir::Node n;
  n.name = "relu";
  n.op_type = "Relu";
  n.opset = 17;
  n.inputs = {g.find_value("present_key")};
  n.outputs = {relu};
  g.nodes.push_back(n);
  g.outputs.push_back(relu);
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  BuildReport rep;
  auto bytes = builder::build_plan_from_graph(g, tiny_kv_config(DeviceType::kCpu, true), &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 0u);

  ir::Graph s = tiny_kv_graph();
  const ir::ValueId shape = s.add_value("past_shape");
  n.name = "shape";
  n.op_type = "Shape";
  n.inputs = {s.find_value("past_key")};
  n.outputs = {shape};
  s.nodes.insert(s.nodes.begin(), n);
  s.outputs.push_back(shape);
  ASSERT_TRUE(ir::infer_shapes(s).ok());
  bytes = builder::build_plan_from_graph(s, tiny_kv_config(DeviceType::kCpu, true), &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_EQ(rep.kv_pairs_in_place, 2u);
}

// A buffer sized for the dense past is too small for the capacity layout: refused, naming it.
TEST(KvCacheInPlace, DenseSizedBufferRefused) {
  auto bytes = build_tiny_kv(DeviceType::kCpu, true);
  ASSERT_TRUE(bytes.ok());
  auto rt = Runtime::create({DeviceType::kCpu});
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(*bytes);
  ASSERT_TRUE(engine.ok());
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  std::vector<float> buf(kTinyCapacity * kTinyHeads * kTinyDim * 2, 0.f);
  for (const TensorDesc& d : (*engine)->io_tensors()) {
    if (!d.is_input) {
      ASSERT_TRUE((*ctx)->set_tensor_address(d.name, buf.data(), buf.size() * 4).ok());
      continue;
    }
    Dims dims = d.min;
    ASSERT_TRUE((*ctx)->set_input_shape(d.name, dims).ok());
    const size_t dense = static_cast<size_t>(dims_numel(dims)) * 4;  // one position: not the capacity's room
    ASSERT_TRUE((*ctx)->set_tensor_address(d.name, buf.data(), dense).ok());
  }
  Status st = (*ctx)->execute();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("room for 16 along axis 2"), std::string::npos) << st.message();
}

// Plans whose capacity layouts do not add up are refused at load, naming the tensor or step.
class KvCacheVerify : public ::testing::Test {
 protected:
  void SetUp() override {
    auto bytes = build_tiny_kv(DeviceType::kCpu, true);
    ASSERT_TRUE(bytes.ok());
    plan_ = read(*bytes);
    weights_ = plan_.weight_data;
  }
  std::string refusal(plan::PlanData p) {
    p.weight_data = weights_;
    auto bytes = plan::serialize_plan(p);
    if (!bytes.ok()) return "serialize: " + bytes.status().to_string();
    auto holder = std::make_shared<std::vector<uint8_t>>(std::move(bytes).value());
    auto r = plan::read_plan_bytes(holder->data(), holder->size(), holder);
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidPlan) << r.status().to_string();
    return r.status().message();
  }
  ir::Node& step(plan::PlanData& p, const std::string& op) {
    for (ir::Node& s : p.steps)
      if (s.op_type == op) return s;
    ADD_FAILURE() << "no " << op;
    return p.steps.front();
  }
  plan::PlanData plan_;
  std::vector<Tensor> weights_;
};

TEST_F(KvCacheVerify, UnchangedPlanLoads) { EXPECT_EQ(refusal(plan_), ""); }

TEST_F(KvCacheVerify, CapacityBelowTheProfileRefused) {
  plan::PlanData p = plan_;
  io_named(p, "past_key").seq_capacity = kTinyMaxPast - 1;
  EXPECT_NE(refusal(p).find("input 'past_key' reaches 13 along axis 2, beyond its seq_capacity 12"), std::string::npos)
      << refusal(p);
}

TEST_F(KvCacheVerify, MalformedCapacityOrAxisRefused) {
  for (auto [capacity, axis] : std::vector<std::pair<int64_t, int32_t>>{{-1, 2}, {16, 4}, {16, -1}, {0, 1},
                                                                           {int64_t{1} << 40, 2}}) {
    plan::PlanData p = plan_;
    io_named(p, "present_value").seq_capacity = capacity;
    io_named(p, "present_value").seq_axis = axis;
    EXPECT_NE(refusal(p).find("output 'present_value' has seq_capacity"), std::string::npos)
        << capacity << " / " << axis << ": " << refusal(p);
  }
}

TEST_F(KvCacheVerify, StepReadingAnotherLayoutRefused) {
  plan::PlanData p = plan_;  // the I/O tensor says 20, KvAppend and Attention 16
  io_named(p, "past_key").seq_capacity = 20;
  EXPECT_NE(refusal(p).find("reads 'past_key' with capacity 16 along axis 2, but it is stored with capacity 20"),
            std::string::npos) << refusal(p);

  p = plan_;  // Attention reads the cache densely: it would take the wrong rows
  step(p, "Attention").attrs.erase("kv_capacity");
  EXPECT_NE(refusal(p).find("(Attention) reads 'present_key' dense, but it is stored with capacity 16"),
            std::string::npos) << refusal(p);

  p = plan_;  // a capacity-strided output no step writes so
  io_named(p, "y").seq_capacity = 16;
  io_named(p, "y").seq_axis = 2;
  EXPECT_NE(refusal(p).find("writes 'y' dense, but it is stored with capacity 16"), std::string::npos) << refusal(p);

  p = plan_;  // a dense op handed a capacity-strided input
  ir::Node& append = step(p, "KvAppend");
  append.op_type = "Concat";
  append.attrs.erase("capacity");
  EXPECT_NE(refusal(p).find("(Concat) reads 'past_"), std::string::npos) << refusal(p);
}

TEST_F(KvCacheVerify, KvCapacityOnADenseCacheRefused) {
  plan::PlanData p = plan_;  // Attention's stride disagrees with the cache's
  step(p, "Attention").attrs["kv_capacity"] = ir::Attribute::make_int(kTinyCapacity + 4);
  EXPECT_NE(refusal(p).find("with capacity 20 along axis 2, but it is stored with capacity 16"), std::string::npos)
      << refusal(p);

  // A dense plan whose Attention claims a capacity would read rows past the caller's dense buffers.
  auto dense = build_tiny_kv(DeviceType::kCpu, false);
  ASSERT_TRUE(dense.ok());
  p = read(*dense);
  weights_ = p.weight_data;
  step(p, "Attention").attrs["kv_capacity"] = ir::Attribute::make_int(kTinyCapacity);
  EXPECT_NE(refusal(p).find("(Attention) reads 'present_key' with capacity 16 along axis 2, but it is stored dense"),
            std::string::npos) << refusal(p);
}

}  // namespace
}  // namespace streamrt::testing
