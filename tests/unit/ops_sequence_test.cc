// Sequence and optional values: the host kernels (values and errors), the build-time folding of
// traceable sequences into tensor ops, and plans with sequence inputs / outputs run on the CPU
// engine through ExecutionContext::set_sequence_input / sequence_output.
#include <gtest/gtest.h>

#include "builder/build_graph.h"
#include "builder/passes.h"
#include "engine_test_util.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"
#include "ops/sequence_value.h"
#include "plan/plan.h"
#include "streamrt/runtime.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using testing::f32;
using testing::i64;
using testing::values_f32;
using testing::values_i64;

ir::Node node(const std::string& op, size_t ins, std::map<std::string, ir::Attribute> attrs = {}, size_t outs = 1) {
  return testing::make_node(op, ins, outs, std::move(attrs), 17);
}

// Runs one node on the host; the status when it fails.
Result<std::vector<Tensor>> eval(const ir::Node& n, const std::vector<Tensor>& ins) { return ops::evaluate_on_host(n, ins); }

std::vector<Tensor> items(const Tensor& blob) {
  auto v = ops::decode_seq(blob, "test");
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  return v.ok() ? v->items : std::vector<Tensor>{};
}

Tensor construct(const std::vector<Tensor>& ts) {
  auto r = eval(node("SequenceConstruct", ts.size()), ts);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? (*r)[0] : Tensor();
}

TEST(Sequence, EncodingRoundTripsAndRefusesCorruptBytes) {
  ops::SeqValue v;
  v.elem_dtype = DataType::kFloat32;
  v.items = {f32({2}, {1, 2}), f32({1, 3}, {3, 4, 5}), f32({0}, {})};
  auto blob = ops::encode_seq(v);
  ASSERT_TRUE(blob.ok());
  auto back = ops::decode_seq(*blob, "x");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->items.size(), 3u);
  EXPECT_EQ(back->items[1].dims(), (Dims{1, 3}));
  EXPECT_EQ(values_f32(back->items[1]), (std::vector<float>{3, 4, 5}));
  // Every truncation, and a dim made huge, is refused, never read past.
  for (size_t n = 0; n < blob->nbytes(); n += 7) EXPECT_FALSE(ops::decode_seq(blob->data(), n, "x").ok()) << n;
  std::vector<uint8_t> bad(static_cast<const uint8_t*>(blob->data()), static_cast<const uint8_t*>(blob->data()) + blob->nbytes());
  const int64_t huge = int64_t{1} << 40;
  std::memcpy(bad.data() + 7 * 8, &huge, 8);  // tensor 0's first dim
  EXPECT_FALSE(ops::decode_seq(bad.data(), bad.size(), "x").ok());
}

TEST(Sequence, InsertEraseAtAndLength) {
  Tensor s = construct({f32({2}, {1, 2}), f32({1}, {3})});
  auto ins = eval(node("SequenceInsert", 3), {s, f32({3}, {7, 8, 9}), i64({}, {0})});
  ASSERT_TRUE(ins.ok()) << ins.status().to_string();
  auto at = eval(node("SequenceAt", 2), {(*ins)[0], i64({}, {-3})});
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(values_f32((*at)[0]), (std::vector<float>{7, 8, 9}));
  auto er = eval(node("SequenceErase", 1), {(*ins)[0]});  // the last one
  ASSERT_TRUE(er.ok());
  auto len = eval(node("SequenceLength", 1), {(*er)[0]});
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(values_i64((*len)[0]), (std::vector<int64_t>{2}));
  auto rest = items((*er)[0]);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(values_f32(rest[1]), (std::vector<float>{1, 2}));
}

TEST(Sequence, BadPositionsAndTypesAreErrorsNamingTheNode) {
  Tensor s = construct({f32({2}, {1, 2})});
  auto at = eval(node("SequenceAt", 2), {s, i64({}, {1})});
  ASSERT_FALSE(at.ok());
  EXPECT_NE(at.status().message().find("SequenceAt_0"), std::string::npos) << at.status().to_string();
  EXPECT_NE(at.status().message().find("outside [-1, 0]"), std::string::npos) << at.status().to_string();
  EXPECT_FALSE(eval(node("SequenceInsert", 3), {s, f32({1}, {0}), i64({}, {3})}).ok());
  EXPECT_FALSE(eval(node("SequenceInsert", 2), {s, i64({1}, {0})}).ok());  // int64 into a float sequence
  auto empty = eval(node("SequenceEmpty", 0), {});
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(eval(node("SequenceErase", 1), {(*empty)[0]}).ok());
  auto cat = eval(node("ConcatFromSequence", 1, {{"axis", ir::Attribute::make_int(0)}}), {(*empty)[0]});
  ASSERT_FALSE(cat.ok());
  EXPECT_NE(cat.status().message().find("empty sequence"), std::string::npos);
  // A plain tensor where a sequence belongs.
  EXPECT_FALSE(eval(node("SequenceAt", 2), {f32({2}, {1, 2}), i64({}, {0})}).ok());
}

TEST(Sequence, SplitToSequenceAndConcatFromSequence) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto cols = eval(node("SplitToSequence", 1, {{"axis", ir::Attribute::make_int(1)}, {"keepdims", ir::Attribute::make_int(0)}}), {x});
  ASSERT_TRUE(cols.ok()) << cols.status().to_string();
  auto c = items((*cols)[0]);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].dims(), (Dims{2}));
  EXPECT_EQ(values_f32(c[2]), (std::vector<float>{3, 6}));
  auto chunks = eval(node("SplitToSequence", 2, {{"axis", ir::Attribute::make_int(1)}}), {x, i64({}, {2})});
  ASSERT_TRUE(chunks.ok());
  auto ch = items((*chunks)[0]);
  ASSERT_EQ(ch.size(), 2u);
  EXPECT_EQ(ch[1].dims(), (Dims{2, 1}));
  EXPECT_FALSE(eval(node("SplitToSequence", 2), {x, i64({2}, {1, 2})}).ok());  // lengths sum to 3, axis 0 has 2
  // Concat back along axis 1; stacked on a new last axis.
  auto back = eval(node("ConcatFromSequence", 1, {{"axis", ir::Attribute::make_int(1)}}), {(*chunks)[0]});
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ((*back)[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32((*back)[0]), values_f32(x));
  auto stacked = eval(node("ConcatFromSequence", 1, {{"axis", ir::Attribute::make_int(-1)}, {"new_axis", ir::Attribute::make_int(1)}}),
                      {(*cols)[0]});
  ASSERT_TRUE(stacked.ok()) << stacked.status().to_string();
  EXPECT_EQ((*stacked)[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_f32((*stacked)[0]), values_f32(x));
}

TEST(Sequence, OptionalHoldsOrLacksAValue) {
  auto some = eval(node("Optional", 1), {f32({2}, {1, 2})});
  ASSERT_TRUE(some.ok()) << some.status().to_string();
  auto has = eval(node("OptionalHasElement", 1), {(*some)[0]});
  ASSERT_TRUE(has.ok());
  EXPECT_EQ(*(*has)[0].data_as<uint8_t>(), 1);
  auto get = eval(node("OptionalGetElement", 1), {(*some)[0]});
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(values_f32((*get)[0]), (std::vector<float>{1, 2}));
  // Optional() of type optional(seq(tensor(float))): empty.
  ir::Node none = node("Optional", 0, {{"type", ir::Attribute::make_ints({1, 1, 0, 0})}});
  auto empty = eval(none, {});
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  auto has_not = eval(node("OptionalHasElement", 1), {(*empty)[0]});
  ASSERT_TRUE(has_not.ok());
  EXPECT_EQ(*(*has_not)[0].data_as<uint8_t>(), 0);
  auto bad = eval(node("OptionalGetElement", 1), {(*empty)[0]});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("holds no value"), std::string::npos);
  EXPECT_NE(bad.status().message().find("OptionalGetElement_0"), std::string::npos);
}

// x [3, 4] -> SplitToSequence(axis 0, keepdims 0) -> insert y at front -> At(1), At(-1),
// Concat(new_axis), Length: all traceable, so the plan has no sequence step.
ir::Graph exporter_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_value("x", DataType::kFloat32, {3, 4}, true);
  ir::ValueId y = g.add_value("y", DataType::kFloat32, {4}, true);
  g.inputs = {x, y};
  ir::ValueId seq = g.add_value("seq"), seq2 = g.add_value("seq2"), zero = g.add_value("zero"), one = g.add_value("one"),
              last = g.add_value("last");
  g.set_constant(zero, i64({}, {0}));
  g.set_constant(one, i64({}, {1}));
  g.set_constant(last, i64({}, {-1}));
  ir::ValueId a = g.add_value("a"), b = g.add_value("b"), stacked = g.add_value("stacked"), len = g.add_value("len"),
              seq3 = g.add_value("seq3");
  testing::add_node(g, "SplitToSequence", {x}, {seq}, {{"keepdims", ir::Attribute::make_int(0)}});
  testing::add_node(g, "SequenceInsert", {seq, y, zero}, {seq2});
  testing::add_node(g, "SequenceErase", {seq2, one}, {seq3});  // drops x's row 0
  testing::add_node(g, "SequenceAt", {seq3, one}, {a});
  testing::add_node(g, "SequenceAt", {seq3, last}, {b});
  testing::add_node(g, "ConcatFromSequence", {seq3}, {stacked},
                    {{"axis", ir::Attribute::make_int(0)}, {"new_axis", ir::Attribute::make_int(1)}});
  testing::add_node(g, "SequenceLength", {seq3}, {len});
  g.outputs = {a, b, stacked, len};
  EXPECT_TRUE(g.topo_sort().ok());
  return g;
}

Result<std::vector<Tensor>> run_tensors(const std::vector<uint8_t>& bytes, const std::map<std::string, Tensor>& inputs) {
  return testing::run_cpu_plan(bytes, inputs);
}

TEST(Sequence, ExporterSequencesFoldIntoTensorStepsAtBuild) {
  auto bytes = builder::build_plan_from_graph(exporter_graph(), BuilderConfig{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  for (const ir::Node& s : testing::read_back(*bytes).steps)
    EXPECT_EQ(s.op_type.find("Sequence"), std::string::npos) << s.op_type;
  auto out = run_tensors(*bytes, {{"x", f32({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23})},
                                  {"y", f32({4}, {-1, -2, -3, -4})}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // seq3 = [y, x1, x2]
  EXPECT_EQ(values_f32((*out)[0]), (std::vector<float>{10, 11, 12, 13}));
  EXPECT_EQ(values_f32((*out)[1]), (std::vector<float>{20, 21, 22, 23}));
  EXPECT_EQ((*out)[2].dims(), (Dims{3, 4}));
  EXPECT_EQ(values_f32((*out)[2]), (std::vector<float>{-1, -2, -3, -4, 10, 11, 12, 13, 20, 21, 22, 23}));
  EXPECT_EQ(values_i64((*out)[3]), (std::vector<int64_t>{3}));
}

TEST(Sequence, SplitWithLengthsFoldsAndAnUnknownPositionStaysOnTheHost) {
  // seq = SplitToSequence(x, [1, 3]); out = ConcatFromSequence(seq, axis 0) folds; At(seq, p) with
  // p an input stays a SequenceAt step (and its sequence with it).
  ir::Graph g;
  ir::ValueId x = g.add_value("x", DataType::kFloat32, {4}, true);
  ir::ValueId p = g.add_value("p", DataType::kInt64, {}, true);
  g.inputs = {x, p};
  ir::ValueId lens = g.add_value("lens"), seq = g.add_value("seq"), cat = g.add_value("cat"), el = g.add_value("el");
  g.set_constant(lens, i64({2}, {1, 3}));
  testing::add_node(g, "SplitToSequence", {x, lens}, {seq});
  testing::add_node(g, "ConcatFromSequence", {seq}, {cat}, {{"axis", ir::Attribute::make_int(0)}});
  testing::add_node(g, "SequenceAt", {seq, p}, {el});
  g.outputs = {cat, el};
  auto bytes = builder::build_plan_from_graph(g, BuilderConfig{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  std::vector<std::string> ops;
  for (const ir::Node& s : testing::read_back(*bytes).steps) ops.push_back(s.op_type);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "SequenceAt"), 1);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "ConcatFromSequence"), 0);
  const Tensor xv = f32({4}, {1, 2, 3, 4});
  auto out = run_tensors(*bytes, {{"x", xv}, {"p", i64({}, {1})}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(values_f32((*out)[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(values_f32((*out)[1]), (std::vector<float>{2, 3, 4}));
  auto bad = run_tensors(*bytes, {{"x", xv}, {"p", i64({}, {2})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SequenceAt"), std::string::npos) << bad.status().to_string();
}

// in (a sequence of float) -> SequenceInsert(in, t) -> out, SequenceLength(out) -> n.
ir::Graph sequence_io_graph() {
  ir::Graph g;
  ir::ValueId in = g.add_value("in", DataType::kUInt8, {kDynamicDim}, true);
  g.value(in).seq = ops::seq_type(ValueKind::kSequence, DataType::kFloat32, {kDynamicDim}, true);
  ir::ValueId t = g.add_value("t", DataType::kFloat32, {2}, true);
  g.inputs = {in, t};
  ir::ValueId out = g.add_value("out"), n = g.add_value("n");
  testing::add_node(g, "SequenceInsert", {in, t}, {out});
  testing::add_node(g, "SequenceLength", {out}, {n});
  g.outputs = {out, n};
  return g;
}

TEST(Sequence, PlansKeepSequenceTypesAndRefuseCorruptOnes) {
  auto bytes = builder::build_plan_from_graph(sequence_io_graph(), BuilderConfig{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  plan::PlanData pd = testing::read_back(*bytes);
  const int32_t in = pd.inputs[0].value, out = pd.outputs[0].value;
  EXPECT_EQ(pd.values[in].seq.kind, ValueKind::kSequence);
  EXPECT_EQ(pd.values[in].seq.elem_dtype, DataType::kFloat32);
  EXPECT_EQ(pd.values[out].seq.kind, ValueKind::kSequence);
  EXPECT_EQ(pd.values[pd.outputs[1].value].seq.kind, ValueKind::kTensor);
  auto corrupt = [&](auto edit) {
    plan::PlanData copy = testing::read_back(*bytes);
    edit(copy);
    auto b = plan::serialize_plan(copy);
    if (!b.ok()) return b.status();
    return plan::read_plan_bytes(b->data(), b->size(), nullptr).status();
  };
  EXPECT_TRUE(corrupt([](plan::PlanData&) {}).ok());
  EXPECT_FALSE(corrupt([&](plan::PlanData& p) { p.values[in].seq.kind = static_cast<ValueKind>(9); }).ok());
  EXPECT_FALSE(corrupt([&](plan::PlanData& p) { p.values[in].seq.elem_dtype = DataType::kUndefined; }).ok());
  EXPECT_FALSE(corrupt([&](plan::PlanData& p) { p.values[in].seq.elem_dims = {-5}; }).ok());
  EXPECT_FALSE(corrupt([&](plan::PlanData& p) { p.values[pd.outputs[1].value].seq.elem_dtype = DataType::kFloat32; }).ok());
}

// A sequence input and output through the public API: out = SequenceInsert(in, t), n = Length(out).
TEST(Sequence, SequenceInputsAndOutputsBindThroughTheContext) {
  auto bytes = builder::build_plan_from_graph(sequence_io_graph(), BuilderConfig{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto rt = Runtime::create({DeviceType::kCpu}).value();
  auto engine = rt->load_engine_bytes(*bytes);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto descs = (*engine)->io_tensors();
  EXPECT_EQ(descs[0].kind, ValueKind::kSequence);
  EXPECT_EQ(descs[0].elem_dtype, DataType::kFloat32);
  EXPECT_EQ(descs[2].kind, ValueKind::kSequence);
  auto ctx = (*engine)->create_execution_context().value();
  SequenceValue sv;
  sv.elem_dtype = DataType::kFloat32;
  float one = 1.5f;
  sv.tensors.push_back({DataType::kFloat32, {1}, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&one), reinterpret_cast<uint8_t*>(&one) + 4)});
  ASSERT_TRUE(ctx->set_sequence_input("in", sv).ok());
  SequenceValue wrong = sv;
  wrong.elem_dtype = DataType::kInt64;
  EXPECT_FALSE(ctx->set_sequence_input("in", wrong).ok());
  const Tensor tv = f32({2}, {7, 8});
  ASSERT_TRUE(ctx->set_input_shape("t", {2}).ok());
  ASSERT_TRUE(ctx->set_tensor_address("t", const_cast<void*>(tv.data()), tv.nbytes()).ok());
  int64_t count = 0;
  ASSERT_TRUE(ctx->set_tensor_address("n", &count, sizeof(count)).ok());
  EXPECT_EQ(ctx->sequence_output("out").status().code(), StatusCode::kInvalidState);  // before a run
  Status st = ctx->execute();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(count, 2);
  auto res = ctx->sequence_output("out");
  ASSERT_TRUE(res.ok()) << res.status().to_string();
  ASSERT_EQ(res->tensors.size(), 2u);
  EXPECT_EQ(res->tensors[1].dims, (Dims{2}));
  float got[2];
  std::memcpy(got, res->tensors[1].data.data(), 8);
  EXPECT_EQ(got[0], 7.f);
  EXPECT_EQ(got[1], 8.f);
}

}  // namespace
}  // namespace streamrt
