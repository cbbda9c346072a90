// GPU tests of Conv with its fused epilogue and recorded cuDNN algorithms (ctest label `gpu`;
// every test skips, saying why, without a CUDA device). Each fused block runs on CUDA and is
// compared with the unfused plan on the CPU: float32 at the conformance tolerance, float16 /
// bfloat16 (the builder's precision conversion) at theirs. The cases walk the epilogue
// kernel's vector widths (Y planes of 64, 196, 30 and 49 elements: 16-, 8-, 4-byte packs and
// single elements), the padded-X path (asymmetric pads), grouped convolutions, and the direct
// kernel (4 spatial axes, which cuDNN does not take).
#include <gtest/gtest.h>

#include <cmath>

#include "../unit/conv_test_util.h"
#include "builder/tactics.h"
#include "gpu_test_util.h"

namespace streamrt {
namespace {

using testing::ConvBlock;
using testing::ConvTail;

using testing::expect_close;
using testing::tolerance;

std::string describe(const ConvBlock& b, DataType precision) {
  std::string s = "X " + dims_to_string(b.x) + " M " + std::to_string(b.maps) + " kernel " + dims_to_string(b.kernel) +
                  " pads " + dims_to_string(b.pads) + " strides " + dims_to_string(b.strides) + " group " +
                  std::to_string(b.group) + (b.bias ? " bias" : " no bias") + " tail " +
                  std::to_string(static_cast<int>(b.tail)) + " " + dtype_name(precision);
  return s;
}

// Builds `b` fused for CUDA and unfused for the CPU (the reference), runs both on the same
// inputs and compares. Returns the CUDA plan. `conv_tactics`: BuilderPasses::conv_tactics.
std::vector<uint8_t> check_block(const ConvBlock& b, DataType precision, bool tactics = true,
                                 bool conv_tactics = false) {
  const std::string what = describe(b, precision);
  const ir::Graph g = testing::conv_block_graph(b);
  auto cuda = testing::build_graph_plan(g, DeviceType::kCuda, true, precision, tactics, conv_tactics);
  auto cpu = testing::build_graph_plan(g, DeviceType::kCpu, false, precision);
  EXPECT_TRUE(cuda.ok()) << what << ": " << cuda.status().to_string();
  EXPECT_TRUE(cpu.ok()) << what << ": " << cpu.status().to_string();
  if (!cuda.ok() || !cpu.ok()) return {};
  const auto in = testing::block_inputs(g, 17);
  auto got = testing::run_graph_plan(DeviceType::kCuda, *cuda, in);
  auto want = testing::run_graph_plan(DeviceType::kCpu, *cpu, in);
  EXPECT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  EXPECT_TRUE(want.ok()) << what << ": " << want.status().to_string();
  if (got.ok() && want.ok()) expect_close(*got, *want, tolerance(precision), what);
  return *cuda;
}

class GpuConv : public ::testing::Test {
 protected:
  void SetUp() override { SRT_REQUIRE_GPU(); }
};

TEST_F(GpuConv, FusedEpiloguesMatchTheUnfusedCpuPlan) {
  const std::vector<Dims> inputs = {{2, 8, 8, 8}, {2, 8, 14, 14}, {3, 8, 5, 6}, {2, 8, 7, 7}};  // planes 64 196 30 49
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const Dims& x : inputs)
      for (ConvTail tail : {ConvTail::kRelu, ConvTail::kAdd, ConvTail::kAddSwappedRelu})
        for (bool bias : {true, false})
          check_block({.x = x, .maps = 8, .bias = bias, .tail = tail}, precision);
}

TEST_F(GpuConv, PaddedGroupedStridedDilatedAndDirectConvolutions) {
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16})
    for (const ConvBlock& b : testing::varied_blocks()) check_block(b, precision);
}

// A ResNet-like problem: the recorded algorithm is the one the kernel runs, and --no-tactics (or
// conv tactics left off, the default) records none.
TEST_F(GpuConv, TacticsRecordTheAlgorithmAndTheKernelUsesIt) {
  const ConvBlock b{.x = {8, 64, 28, 28}, .maps = 64, .tail = ConvTail::kAddRelu};
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16}) {
    builder::TacticCounters& n = builder::tactic_counters();
    const uint64_t used = n.recorded_runs.load(), fell_back = n.fallback_runs.load();
    const std::vector<uint8_t> bytes = check_block(b, precision, true, true);  // opt-in (BuilderPasses says why)
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(n.recorded_runs.load() - used, 1u) << "fell back " << n.fallback_runs.load() - fell_back << " times";
    plan::PlanData p = testing::read_back(bytes);
    ir::Node* conv = testing::find_step(p, "Conv");
    ASSERT_NE(conv, nullptr);
    ASSERT_TRUE(conv->has_attr(builder::kConvAlgoAttr));
    auto r = builder::decode_conv_algo(conv->attrs.at(builder::kConvAlgoAttr));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->problem.x, (std::array<int64_t, 5>{8, 64, 28, 28, 0}));
    std::printf("  %s: %s\n", dtype_name(precision), builder::describe_tactics(*conv).c_str());
    // Malformed and foreign records: the heuristic decides, the result is the same.
    conv->attrs[builder::kConvAlgoAttr] = ir::Attribute::make_ints({1, 2, 3});
    auto malformed = plan::serialize_plan(p);
    ASSERT_TRUE(malformed.ok());
    builder::ConvAlgoRecord foreign = *r;
    foreign.library_version = 1;
    conv->attrs[builder::kConvAlgoAttr] = builder::encode_conv_algo(foreign);
    auto other = plan::serialize_plan(p);
    ASSERT_TRUE(other.ok());
    const ir::Graph g = testing::conv_block_graph(b);
    const auto in = testing::block_inputs(g, 17);
    auto want = testing::run_graph_plan(DeviceType::kCuda, bytes, in);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    for (auto* plan_bytes : {&*malformed, &*other}) {
      auto got = testing::run_graph_plan(DeviceType::kCuda, *plan_bytes, in);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      expect_close(*got, *want, tolerance(precision), "another algorithm");
    }
  }
  for (bool tactics : {false, true}) {
    auto untuned = check_block(b, DataType::kFloat32, tactics, !tactics);
    plan::PlanData p = testing::read_back(untuned);
    EXPECT_FALSE(testing::find_step(p, "Conv")->has_attr(builder::kConvAlgoAttr)) << "tactics " << tactics;
  }
}

}  // namespace
}  // namespace streamrt
