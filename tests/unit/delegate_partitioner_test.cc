// The partitioner on hand-made graphs: maximal connected groups of supported nodes, never a
// merge that would make a cycle through an unsupported node, a schedule with every
// dependency first, and subgraph extraction (inputs, outputs, constants).
#include <gtest/gtest.h>

#include "delegate/partitioner.h"
#include "delegate/preprocess.h"

namespace streamrt::delegate {
namespace {

// A graph of named single-output nodes over f32[4] values: "b = Relu(a)" style edges given as
// {node, op, inputs}. Graph input "x"; outputs as listed.
struct G {
  ir::Graph g;
  ir::ValueId v(const std::string& name) {
    ir::ValueId id = g.find_value(name);
    return id == ir::kNoValue ? g.add_value(name, DataType::kFloat32, {4}, true) : id;
  }
  G& node(const std::string& out, const std::string& op, std::vector<std::string> ins) {
    ir::Node n;
    n.name = out;
    n.op_type = op;
    n.opset = 17;
    for (const auto& i : ins) n.inputs.push_back(v(i));
    n.outputs.push_back(v(out));
    g.nodes.push_back(std::move(n));
    return *this;
  }
  G() { g.inputs.push_back(v("x")); }
};

PartitionOptions unsupported(std::set<std::string> ops) {
  PartitionOptions o;
  o.supported = [ops](const ir::Node& n) { return !ops.count(n.op_type); };
  return o;
}

// Partition of each named node ("-" for a portable kernel), e.g. {"a:0", "u:-"}.
std::vector<std::string> layout(const G& g, const Partitioning& p) {
  std::vector<std::string> out;
  for (size_t n = 0; n < g.g.nodes.size(); ++n)
    out.push_back(g.g.nodes[n].name + ":" + (p.node_partition[n] < 0 ? "-" : std::to_string(p.node_partition[n])));
  return out;
}

std::vector<std::string> schedule(const G& g, const Partitioning& p) {
  std::vector<std::string> out;
  for (const auto& u : p.schedule) out.push_back(u.is_partition ? std::string("P").append(std::to_string(u.index)) : g.g.nodes[u.index].name);
  return out;
}

TEST(DelegatePartitioner, AllSupportedIsOneEngine) {
  G g;
  g.node("a", "Relu", {"x"}).node("b", "Relu", {"a"}).node("c", "Add", {"a", "b"});
  g.g.outputs = {g.v("c")};
  auto p = partition_graph(g.g, PartitionOptions{}).value();  // the CPU engine runs every registered op
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"a:0", "b:0", "c:0"}));
  EXPECT_EQ(schedule(g, p), (std::vector<std::string>{"P0"}));
}

TEST(DelegatePartitioner, AnUnsupportedNodeInTheMiddleBreaksTheGraph) {
  G g;
  g.node("a", "Relu", {"x"}).node("u", "Softmax", {"a"}).node("b", "Relu", {"u"}).node("c", "Relu", {"b"});
  g.g.outputs = {g.v("c")};
  PartitionOptions o;
  o.fallback_ops = {"Softmax"};
  auto p = partition_graph(g.g, o).value();
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"a:0", "u:-", "b:1", "c:1"}));
  EXPECT_EQ(schedule(g, p), (std::vector<std::string>{"P0", "u", "P1"}));
}

// a feeds d directly and through the unsupported u: {a, d} in one engine would need u's result
// inside it and give u its input from it, a cycle. c (supported, beside u) joins a.
TEST(DelegatePartitioner, NoMergeThatMakesACycle) {
  G g;
  g.node("a", "Relu", {"x"}).node("u", "Custom", {"a"}).node("c", "Relu", {"a"}).node("d", "Add", {"c", "u"});
  g.g.outputs = {g.v("d")};
  auto p = partition_graph(g.g, unsupported({"Custom"})).value();
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"a:0", "u:-", "c:0", "d:1"}));
  EXPECT_EQ(schedule(g, p), (std::vector<std::string>{"P0", "u", "P1"}));
}

// A longer detour: a -> u1 -> s -> u2 -> d and a -> d. a and d may not merge (the path through
// u1, s and u2 leaves them), and s touches only unsupported nodes: three engines.
TEST(DelegatePartitioner, DetoursThroughSeveralNodes) {
  G g;
  g.node("a", "Relu", {"x"})
      .node("u1", "Custom", {"a"})
      .node("s", "Relu", {"u1"})
      .node("u2", "Custom", {"s"})
      .node("d", "Add", {"a", "u2"});
  g.g.outputs = {g.v("d")};
  auto p = partition_graph(g.g, unsupported({"Custom"})).value();
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"a:0", "u1:-", "s:1", "u2:-", "d:2"}));
  EXPECT_EQ(schedule(g, p), (std::vector<std::string>{"P0", "u1", "P1", "u2", "P2"}));
}

// Merges that become possible only once others happened: b -> c -> d and b -> d, all
// supported: first {b, c}, then d joins through both edges.
TEST(DelegatePartitioner, MergesToAFixpoint) {
  G g;
  g.node("u", "Custom", {"x"}).node("b", "Relu", {"u"}).node("c", "Relu", {"b"}).node("d", "Add", {"b", "c"});
  g.g.outputs = {g.v("d")};
  auto p = partition_graph(g.g, unsupported({"Custom"})).value();
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"u:-", "b:0", "c:0", "d:0"}));
}

TEST(DelegatePartitioner, DisconnectedGroupsAreSeparateEngines) {
  G g;
  g.node("a", "Relu", {"x"}).node("b", "Relu", {"x"}).node("u", "Custom", {"a", "b"});
  g.g.outputs = {g.v("u")};
  auto p = partition_graph(g.g, unsupported({"Custom"})).value();
  EXPECT_EQ(layout(g, p), (std::vector<std::string>{"a:0", "b:1", "u:-"}));
  EXPECT_EQ(schedule(g, p), (std::vector<std::string>{"P0", "P1", "u"}));
}

TEST(DelegatePartitioner, UnsortedGraphIsAnError) {
  G g;
  g.node("b", "Relu", {"a"}).node("a", "Relu", {"x"});
  g.g.outputs = {g.v("b")};
  EXPECT_EQ(partition_graph(g.g, PartitionOptions{}).status().code(), StatusCode::kInternal);
}

TEST(DelegatePartitioner, CudaSupportNeedsACudaKernel) {
  ir::Node relu;
  relu.op_type = "Relu";
  ir::Node unknown;
  unknown.op_type = "NoSuchOp";
  EXPECT_TRUE(engine_supports_node(DeviceType::kCpu, relu));
  EXPECT_FALSE(engine_supports_node(DeviceType::kCpu, unknown));
  EXPECT_FALSE(engine_supports_node(DeviceType::kCuda, unknown));
#if !STREAMRT_WITH_CUDA
  EXPECT_FALSE(engine_supports_node(DeviceType::kCuda, relu)) << "a build without CUDA runs nothing on CUDA";
#else
  EXPECT_TRUE(engine_supports_node(DeviceType::kCuda, relu));
#endif
  // An op the builder always rewrites (OpSchema::built_as) goes by the op it becomes:
  // com.microsoft MatMulNBits runs as WeightOnlyMatMul, which has a CUDA kernel.
  ir::Node nbits;
  nbits.op_type = "MatMulNBits";
  nbits.domain = "com.microsoft";
  EXPECT_TRUE(engine_supports_node(DeviceType::kCpu, nbits));
#if STREAMRT_WITH_CUDA
  EXPECT_TRUE(engine_supports_node(DeviceType::kCuda, nbits));
#endif
}

TEST(DelegatePartitioner, ExtractSubgraphFindsItsBoundary) {
  G g;
  g.node("a", "Relu", {"x"}).node("b", "Add", {"a", "w"}).node("c", "Relu", {"b"}).node("d", "Relu", {"b"});
  g.g.set_constant(g.v("w"), Tensor::from_vector<float>(DataType::kFloat32, {4}, {1, 2, 3, 4}));
  g.g.outputs = {g.v("c"), g.v("d")};
  // {a, b, c}: reads x; b is read by d outside, c is a graph output; w comes along as a constant.
  Subgraph s = extract_subgraph(g.g, std::vector<size_t>{0, 1, 2}, "part");
  EXPECT_EQ(s.graph.name, "part");
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0], g.v("x"));
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_EQ(s.outputs[0], g.v("b"));
  EXPECT_EQ(s.outputs[1], g.v("c"));
  EXPECT_EQ(s.graph.nodes.size(), 3u);
  EXPECT_EQ(s.graph.inputs.size(), 1u);
  EXPECT_EQ(s.graph.value(s.graph.inputs[0]).name, "x");
  EXPECT_EQ(s.graph.constants.size(), 1u);
  ASSERT_EQ(s.graph.outputs.size(), 2u);
  EXPECT_EQ(s.graph.value(s.graph.outputs[1]).name, "c");
  // The subgraph's node b reads its own copies of a and w.
  const ir::Node& b = s.graph.nodes[1];
  EXPECT_EQ(s.graph.value(b.inputs[0]).name, "a");
  EXPECT_TRUE(s.graph.is_constant(b.inputs[1]));
}

}  // namespace
}  // namespace streamrt::delegate
