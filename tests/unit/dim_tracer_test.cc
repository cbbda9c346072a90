// DimTracer on small graphs: the rules that let fusions prove dims equal at every input shape
// (Unsqueeze / Squeeze, Range, the TorchScript Expand-shape guard, named graph-input dims), and
// the cases it must not prove.
#include <gtest/gtest.h>

#include "builder/dim_tracer.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;

struct Traced {
  ir::Graph g;
  ir::ValueId a, b, u, sq_all, sq_one, range, guarded;
};

// a [batch, 4], b [batch, 8] (both "batch"); u = Unsqueeze(a, [1]); sq_all = Squeeze(u) (no axes);
// sq_one = Squeeze(u, [1]); range = Range(0, Shape(a)[0], 1); guarded = Where(Equal(s, -1), 1, s)
// with s = Shape(b).
Traced traced_graph() {
  Traced t;
  ir::Graph& g = t.g;
  t.a = g.add_value("a", DataType::kFloat32, {-1, 4}, true);
  t.b = g.add_value("b", DataType::kFloat32, {-1, 8}, true);
  g.inputs = {t.a, t.b};
  g.input_dim_params[t.a] = {"batch", ""};
  g.input_dim_params[t.b] = {"batch", ""};
  auto one_axis = g.add_value("axis1"), zero = g.add_value("zero"), step = g.add_value("step");
  auto minus_one = g.add_value("minus_one"), ones = g.add_value("ones"), idx0 = g.add_value("idx0");
  g.set_constant(one_axis, i64({1}, {1}));
  g.set_constant(zero, i64({}, {0}));
  g.set_constant(step, i64({}, {1}));
  g.set_constant(minus_one, i64({}, {-1}));
  g.set_constant(ones, i64({2}, {1, 1}));
  g.set_constant(idx0, i64({}, {0}));
  t.u = g.add_value("u");
  t.sq_all = g.add_value("sq_all");
  t.sq_one = g.add_value("sq_one");
  auto shape_a = g.add_value("shape_a"), n = g.add_value("n");
  t.range = g.add_value("range");
  auto shape_b = g.add_value("shape_b"), eq = g.add_value("eq");
  t.guarded = g.add_value("guarded");
  add_node(g, "Unsqueeze", {t.a, one_axis}, {t.u});
  add_node(g, "Squeeze", {t.u}, {t.sq_all});
  add_node(g, "Squeeze", {t.u, one_axis}, {t.sq_one});
  add_node(g, "Shape", {t.a}, {shape_a});
  add_node(g, "Gather", {shape_a, idx0}, {n});
  add_node(g, "Range", {zero, n, step}, {t.range});
  add_node(g, "Shape", {t.b}, {shape_b});
  add_node(g, "Equal", {shape_b, minus_one}, {eq});
  add_node(g, "Where", {eq, ones, shape_b}, {t.guarded});
  g.outputs = {t.sq_all, t.sq_one, t.range, t.guarded};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return t;
}

TEST(DimTracer, FollowsSqueezeFamilyRangeAndNamedInputDims) {
  Traced t = traced_graph();
  GraphIndex idx(t.g);
  DimTracer tr(t.g, idx);
  const auto batch = tr.dim(t.a, 0);
  ASSERT_TRUE(batch && !batch->is_static());
  EXPECT_EQ(tr.dim(t.b, 0), batch) << "inputs' dims named alike are one size";
  EXPECT_EQ(tr.dim(t.u, 0), batch);
  EXPECT_TRUE(tr.dim(t.u, 1)->is(1)) << "the inserted axis";
  EXPECT_TRUE(tr.dim(t.u, 2)->is(4));
  EXPECT_EQ(tr.dim(t.sq_one, 0), batch);
  EXPECT_EQ(tr.dim(t.range, 0), batch) << "Range(0, batch, 1) has batch elements";
  EXPECT_EQ(tr.element(t.guarded, 0), batch) << "a size is never -1: the guard passes it through";
  EXPECT_TRUE(tr.element(t.guarded, 1)->is(8));
}

TEST(DimTracer, ProvesNothingItCannot) {
  Traced t = traced_graph();
  // Squeeze without axes drops every dim of size 1: the dynamic batch might be one of them.
  {
    GraphIndex idx(t.g);
    DimTracer tr(t.g, idx);
    EXPECT_NE(tr.dim(t.sq_all, 0), tr.dim(t.a, 0));
  }
  // Without the shared name the two batches are separate sizes.
  t.g.input_dim_params.erase(t.b);
  GraphIndex idx(t.g);
  DimTracer tr(t.g, idx);
  EXPECT_NE(tr.dim(t.b, 0), tr.dim(t.a, 0));
  EXPECT_NE(tr.element(t.guarded, 0), tr.dim(t.a, 0));
}

// A KV cache's present length when the new tokens are dynamic too: past + new, two sizes of their
// own, is one form whichever way it is summed (Concat along the axis, Add of Shape elements); a third
// symbolic term is not traced.
TEST(DimTracer, SumsTwoSymbolicSizes) {
  ir::Graph g;
  const ir::ValueId past = g.add_value("past", DataType::kFloat32, {-1}, true);
  const ir::ValueId fresh = g.add_value("new", DataType::kFloat32, {-1}, true);
  g.inputs = {past, fresh};
  g.input_dim_params[past] = {"p"};
  g.input_dim_params[fresh] = {"s"};
  const ir::ValueId c = g.add_value("c"), d = g.add_value("d"), three = g.add_value("three");
  const ir::ValueId sp = g.add_value("sp"), sf = g.add_value("sf"), sum = g.add_value("sum");
  const std::map<std::string, ir::Attribute> axis0 = {{"axis", ir::Attribute::make_int(0)}};
  add_node(g, "Concat", {past, fresh}, {c}, axis0);
  add_node(g, "Concat", {fresh, past}, {d}, axis0);
  add_node(g, "Concat", {past, fresh, past}, {three}, axis0);
  add_node(g, "Shape", {past}, {sp});
  add_node(g, "Shape", {fresh}, {sf});
  add_node(g, "Add", {sf, sp}, {sum});
  g.outputs = {c, d, three, sum};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  const auto pc = tr.dim(c, 0);
  ASSERT_TRUE(pc && !pc->is_static());
  EXPECT_NE(pc->root2, ir::kNoValue);
  EXPECT_EQ(tr.dim(d, 0), pc);
  EXPECT_EQ(tr.element(sum, 0), pc);
  EXPECT_NE(tr.dim(past, 0), pc);
  EXPECT_NE(tr.dim(three, 0), pc);
  EXPECT_EQ(tr.dim(three, 0), (SymDim{three, 0})) << "past + new + past stays a size of its own";
}

// A projection [1, S, 128] split into heads [1, -1, 2, 64] keeps S as its -1; [1, -1, 4, 64] halves it,
// which is no size the tracer names.
TEST(DimTracer, InferredReshapeDimKeepsTheOneSymbolicDim) {
  ir::Graph g;
  const ir::ValueId x = g.add_value("x", DataType::kFloat32, {1, -1, 128}, true);
  g.inputs = {x};
  g.input_dim_params[x] = {"", "seq", ""};
  const ir::ValueId t2 = g.add_value("t2"), t4 = g.add_value("t4"), heads = g.add_value("heads"), half = g.add_value("half");
  g.set_constant(t2, i64({4}, {1, -1, 2, 64}));
  g.set_constant(t4, i64({4}, {1, -1, 4, 64}));
  add_node(g, "Reshape", {x, t2}, {heads});
  add_node(g, "Reshape", {x, t4}, {half});
  g.outputs = {heads, half};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  const auto seq = tr.dim(x, 1);
  ASSERT_TRUE(seq && !seq->is_static());
  EXPECT_EQ(tr.dim(heads, 1), seq);
  EXPECT_NE(tr.dim(half, 1), seq);
}

// MatMul's batch dims are its operands' broadcast, its columns B's; a fused Attention's rows are Q's
// where its bshd bits put them, its batch the operands' broadcast.
TEST(DimTracer, MatMulAndAttentionDims) {
  ir::Graph g;
  const ir::ValueId q = g.add_value("q", DataType::kFloat32, {-1, -1, 4, 8}, true);   // [B, S, H, D]
  const ir::ValueId k = g.add_value("k", DataType::kFloat32, {-1, 4, -1, 8}, true);   // [B, H, P, D]
  g.inputs = {q, k};
  g.input_dim_params[q] = {"batch", "seq", "", ""};
  g.input_dim_params[k] = {"batch", "", "past", ""};
  const ir::ValueId qt = g.add_value("qt"), kt = g.add_value("kt"), s = g.add_value("s"), y = g.add_value("y");
  add_node(g, "Transpose", {q}, {qt}, {{"perm", ir::Attribute::make_ints({0, 2, 1, 3})}});
  add_node(g, "Transpose", {k}, {kt}, {{"perm", ir::Attribute::make_ints({0, 1, 3, 2})}});
  add_node(g, "MatMul", {qt, kt}, {s});
  add_node(g, "Attention", {q, k, k}, {y}, {{"bshd", ir::Attribute::make_int(9)}});
  g.outputs = {s, y};
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  GraphIndex idx(g);
  DimTracer tr(g, idx);
  const auto batch = tr.dim(q, 0), seq = tr.dim(q, 1), past = tr.dim(k, 2);
  EXPECT_EQ(tr.dim(s, 0), batch);
  EXPECT_EQ(tr.dim(s, 2), seq);
  EXPECT_EQ(tr.dim(s, 3), past);
  EXPECT_EQ(tr.dim(y, 0), batch);
  EXPECT_EQ(tr.dim(y, 1), seq) << "Y laid out [B, S, H, D]: rows on axis 1";
  EXPECT_TRUE(tr.dim(y, 2)->is(4));
}


// Attention's leading axes broadcast Q against K, V and the mask: a batch of 1 in Q is the output's
// only when theirs are 1 too (a static batch-1 export: the output's batch is 1, and a Reshape to
// [1, -1, H * D] after it infers its -1 as the sequence).
TEST(DimTracer, AttentionBatchOfOneNeedsKAndVOfOne) {
  for (int64_t kv_batch : {1, -1}) {
    SCOPED_TRACE("K / V batch " + std::to_string(kv_batch));
    ir::Graph g;
    const ir::ValueId q = g.add_value("q", DataType::kFloat32, {1, 4, -1, 8}, true);         // [1, H, S, D]
    const ir::ValueId k = g.add_value("k", DataType::kFloat32, {kv_batch, 4, -1, 8}, true);  // [B, H, P, D]
    g.inputs = {q, k};
    g.input_dim_params[q] = {"", "", "seq", ""};
    g.input_dim_params[k] = {"batch", "", "past", ""};
    const ir::ValueId y = g.add_value("y"), yt = g.add_value("yt"), shape = g.add_value("shape"), r = g.add_value("r");
    g.set_constant(shape, i64({3}, {1, -1, 32}));
    add_node(g, "Attention", {q, k, k}, {y});
    add_node(g, "Transpose", {y}, {yt}, {{"perm", ir::Attribute::make_ints({0, 2, 1, 3})}});
    add_node(g, "Reshape", {yt, shape}, {r});
    g.outputs = {r};
    ASSERT_TRUE(ir::infer_shapes(g).ok());
    // Shape inference leaves the batch open when K's is; take it to -1 either way so the tracer decides.
    g.value(y).dims[0] = -1;
    g.value(yt).dims[0] = -1;
    GraphIndex idx(g);
    DimTracer tr(g, idx);
    const auto batch = tr.dim(y, 0);
    ASSERT_TRUE(batch.has_value() || kv_batch != 1);
    if (kv_batch == 1) {
      EXPECT_TRUE(batch->is(1));
      EXPECT_EQ(tr.dim(r, 1), tr.dim(q, 2)) << "the Reshape's -1 is the sequence";
    } else {
      EXPECT_FALSE(batch && batch->is(1)) << "K's batch may be larger than Q's";
    }
  }
}
}  // namespace
}  // namespace streamrt::builder
