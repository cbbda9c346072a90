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

}  // namespace
}  // namespace streamrt::builder
