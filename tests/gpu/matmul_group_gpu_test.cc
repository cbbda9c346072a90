// GPU tests of MatMulGroup (ops/matmul_group.h, kernels/matmul_group.cu; skip without a CUDA
// device): Q / K / V, gate / up and an LM head, each with the RMS normalization before it, built
// for CUDA against the CPU plan in float32 / float16 / bfloat16. One row takes the GEMV, two to
// eight the tensor-core kernel (norm in their staging, gate in their epilogue, K split over a
// cluster); more rows, float32, or columns they cannot read in 16-byte runs take the normalization
// kernel, a GEMM a weight and the gate kernel through the scratch output. Q and K rotated by the group
// (builder/fold_group_rotaries.cc): in the one- and few-row kernels' epilogue where their blocks hold
// whole heads, else after the products, in place (kernels/rotary.h). A group of up to eight rows whose
// weights exceed twice the L2 (an LM head) is timed at build time in that kernel against the many-row
// path, which runs where it was faster ("__few_row", builder/tactics.h).
#include <gtest/gtest.h>

#include "builder/tactics.h"
#include "graph_check.h"
#include "matmul_group_graph.h"
#include "ops/matmul_group.h"

namespace streamrt {
namespace {

struct Shape {
  const char* name;
  testing::GroupSpec spec;
};

TEST(GpuMatMulGroup, MatchesTheCpu) {
  SRT_REQUIRE_GPU();
  const Shape shapes[] = {
      {"qkv", {.x = {1, 1024}, .n = {256, 64, 64}}},
      {"qkv bias", {.x = {1, 1024}, .n = {256, 64, 64}, .bias = true}},
      {"qkv no norm", {.x = {1, 512}, .n = {128, 64, 64}, .norm = false}},
      {"qkv K 4096", {.x = {1, 4096}, .n = {64, 64, 64}}},  // two chunks of the largest a block takes
      {"gate up", {.x = {1, 512}, .n = {512, 512}, .gate = true}},
      {"gate up bias", {.x = {1, 512}, .n = {256, 256}, .gate = true, .bias = true}},
      {"lm head", {.x = {1, 256}, .n = {1000}}},
      {"odd columns", {.x = {1, 64}, .n = {6, 10}}},  // no 16-byte runs: the many-row path
      {"odd gate", {.x = {1, 64}, .n = {12, 12}, .gate = true}},
  };
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const Shape& s : shapes)
      for (int64_t rows : {1, 5, 8, 12}) {
        testing::GroupSpec spec = s.spec;
        spec.x.front() = rows;
        const std::string what = std::string(dtype_name(precision)) + " " + s.name + " rows " + std::to_string(rows);
        plan::PlanData p = testing::check_cuda_against_cpu(testing::group_graph(spec), precision, what, 9);
        EXPECT_NE(testing::find_step(p, ops::kMatMulGroup), nullptr) << what;
        EXPECT_EQ(testing::find_step(p, "MatMul"), nullptr) << what;
        EXPECT_EQ(testing::find_step(p, "RMSNormalization"), nullptr) << what;
        EXPECT_EQ(testing::find_step(p, "FusedElementwise"), nullptr) << what;
      }
}

TEST(GpuMatMulGroup, LargeWeightsAreTimedAgainstTheManyRowPathAndMatchTheCpu) {
  SRT_REQUIRE_GPU();
  // 2048 x 65536 half weights: 256 MiB, over twice the L2 of any GPU the kernel runs on.
  for (DataType precision : {DataType::kFloat16, DataType::kBFloat16})
    for (int64_t rows : {1, 8}) {
      if (precision == DataType::kBFloat16 && rows == 1) continue;
      const testing::GroupSpec spec{.x = {rows, 2048}, .n = {65536}};
      const std::string what = std::string(dtype_name(precision)) + " LM head rows " + std::to_string(rows);
      plan::PlanData p = testing::check_cuda_against_cpu(testing::group_graph(spec), precision, what, 9);
      const ir::Node* group = testing::find_step(p, ops::kMatMulGroup);
      ASSERT_NE(group, nullptr) << what;
      auto it = group->attrs.find(builder::kFewRowAttr);
      ASSERT_NE(it, group->attrs.end()) << what << ": not timed against the many-row path";
      auto r = builder::decode_few_row(it->second);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status().to_string();
      EXPECT_EQ(r->rows, rows) << what;
      EXPECT_GT(r->kernel_ns, 0) << what;
      EXPECT_GT(r->steps_ns, 0) << what;
      std::printf("  %s: %s\n", what.c_str(), builder::describe_tactics(*group).c_str());
    }
  // Without the norm the head is one MatMul (gemm.cu's GEMV / few-row path), timed the same way.
  for (int64_t rows : {1, 8}) {
    const testing::GroupSpec spec{.x = {rows, 2048}, .n = {65536}, .norm = false};
    const std::string what = "float16 LM head without its norm, rows " + std::to_string(rows);
    plan::PlanData p = testing::check_cuda_against_cpu(testing::group_graph(spec), DataType::kFloat16, what, 9);
    const ir::Node* timed = nullptr;
    for (const ir::Node& step : p.steps)
      if (step.attrs.count(builder::kFewRowAttr)) timed = &step;
    ASSERT_NE(timed, nullptr) << what << ": no step timed against the many-row path";
    auto r = builder::decode_few_row(timed->attrs.at(builder::kFewRowAttr));
    ASSERT_TRUE(r.ok()) << what << ": " << r.status().to_string();
    EXPECT_EQ(r->rows, rows) << what;
    std::printf("  %s (%s): %s\n", what.c_str(), timed->op_type.c_str(), builder::describe_tactics(*timed).c_str());
  }
}

TEST(GpuMatMulGroup, RotatedQueriesAndKeysMatchTheCpu) {
  SRT_REQUIRE_GPU();
  const Shape shapes[] = {
      {"rotary 64", {.x = {1, 1, 512}, .n = {256, 128, 128}, .rotary = 64}},      // 8 elements a thread
      {"rotary 8 bias", {.x = {1, 1, 64}, .n = {32, 16, 16}, .bias = true, .rotary = 8}},  // one
      // Up to eight rows rotate in the products' epilogue where a block holds whole heads: heads of 128
      // take the few-row kernel's 128-column blocks (the GEMV's 64 cannot: rotated after it), of 256 its 256.
      {"rotary 128", {.x = {1, 1, 512}, .n = {256, 128, 128}, .rotary = 128}},
      {"rotary 256", {.x = {1, 1, 512}, .n = {512, 256, 256}, .rotary = 256}},
  };
  const std::pair<int64_t, int64_t> batch_seq[] = {{1, 1}, {1, 5}, {2, 4}, {2, 6}, {3, 20}};
  for (DataType precision : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const Shape& s : shapes)
      for (auto [b, seq] : batch_seq) {
        testing::GroupSpec spec = s.spec;
        spec.x[0] = b, spec.x[1] = seq;
        const std::string what = std::string(dtype_name(precision)) + " " + s.name + " " + std::to_string(b) + " x " +
                                 std::to_string(seq);
        plan::PlanData p = testing::check_cuda_against_cpu(testing::group_graph(spec), precision, what, 9);
        const ir::Node* group = testing::find_step(p, ops::kMatMulGroup);
        ASSERT_NE(group, nullptr) << what;
        EXPECT_EQ(group->attr_int("rotary_dim", 0).value(), spec.rotary) << what;
        EXPECT_EQ(testing::find_step(p, "Rotary"), nullptr) << what;
      }
}

}  // namespace
}  // namespace streamrt
