#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// The input of the ONNX operator docs' examples: channel c, row h, col w holds 9c + 3h + w.
Tensor doc_input() {
  std::vector<float> v;
  for (int c = 0; c < 8; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w) v.push_back(static_cast<float>(9 * c + 3 * h + w));
  return f32({1, 8, 2, 3}, v);
}

TEST(DepthToSpaceOp, DocExamples) {
  auto dcr = run_ok(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(2)}, {"mode", ir::Attribute::make_string("DCR")}}), {doc_input()});
  EXPECT_EQ(dcr[0].dims(), (Dims{1, 2, 4, 6}));
  EXPECT_EQ(values_f32(dcr[0]), (std::vector<float>{0,  18, 1,  19, 2,  20, 36, 54, 37, 55, 38, 56,
                                                   3,  21, 4,  22, 5,  23, 39, 57, 40, 58, 41, 59,
                                                   9,  27, 10, 28, 11, 29, 45, 63, 46, 64, 47, 65,
                                                   12, 30, 13, 31, 14, 32, 48, 66, 49, 67, 50, 68}));
  auto crd = run_ok(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(2)}, {"mode", ir::Attribute::make_string("CRD")}}), {doc_input()});
  EXPECT_EQ(values_f32(crd[0]), (std::vector<float>{0,  9,  1,  10, 2,  11, 18, 27, 19, 28, 20, 29,
                                                   3,  12, 4,  13, 5,  14, 21, 30, 22, 31, 23, 32,
                                                   36, 45, 37, 46, 38, 47, 54, 63, 55, 64, 56, 65,
                                                   39, 48, 40, 49, 41, 50, 57, 66, 58, 67, 59, 68}));
}

// Index formulas straight from the spec's definitions, per output element.
std::vector<int64_t> d2s_map(const Dims& in, int64_t bs, bool crd) {
  const int64_t c2 = in[1] / (bs * bs);
  const Dims out = {in[0], c2, in[2] * bs, in[3] * bs};
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto o = unravel(i, out);
    const int64_t bh = o[2] % bs, bw = o[3] % bs;
    const int64_t c = crd ? o[1] * bs * bs + bh * bs + bw : (bh * bs + bw) * c2 + o[1];
    map.push_back(ravel({o[0], c, o[2] / bs, o[3] / bs}, in));
  }
  return map;
}

std::vector<int64_t> s2d_map(const Dims& in, int64_t bs) {
  const Dims out = {in[0], in[1] * bs * bs, in[2] / bs, in[3] / bs};
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto o = unravel(i, out);
    const int64_t c = o[1] % in[1], block = o[1] / in[1];
    map.push_back(ravel({o[0], c, o[2] * bs + block / bs, o[3] * bs + block % bs}, in));
  }
  return map;
}

TEST(DepthToSpaceOp, BothModesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, {2, 18, 2, 3});
    for (bool crd : {false, true}) {
      std::map<std::string, ir::Attribute> attrs = {{"blocksize", ai(3)}};
      if (crd) attrs["mode"] = ir::Attribute::make_string("CRD");
      auto out = run_ok(make_node("DepthToSpace", 1, 1, attrs), {x});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dims(), (Dims{2, 2, 6, 9}));
      expect_picked(out[0], x, d2s_map(x.dims(), 3, crd));
    }
  }
}

TEST(SpaceToDepthOp, EveryDtypeAndRoundTrip) {
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, {1, 2, 4, 6});
    auto out = run_ok(make_node("SpaceToDepth", 1, 1, {{"blocksize", ai(2)}}), {x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{1, 8, 2, 3}));
    expect_picked(out[0], x, s2d_map(x.dims(), 2));
    // DCR DepthToSpace undoes SpaceToDepth.
    auto back = run_ok(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(2)}}), {out[0]});
    expect_picked(back[0], x, iota_map(x.numel()));
  }
}

TEST(DepthToSpaceOp, ErrorsAndInfer) {
  Tensor x = pattern(DataType::kFloat32, {1, 6, 2, 2});
  EXPECT_FALSE(run_status(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(2)}}), {x}).ok());  // 6 % 4
  EXPECT_FALSE(run_status(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(0)}}), {x}).ok());
  EXPECT_FALSE(run_status(make_node("DepthToSpace", 1), {x}).ok());  // no blocksize
  EXPECT_FALSE(run_status(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(1)}, {"mode", ir::Attribute::make_string("XYZ")}}), {x}).ok());
  EXPECT_FALSE(run_status(make_node("SpaceToDepth", 1, 1, {{"blocksize", ai(4)}}), {x}).ok());  // 2 % 4
  EXPECT_FALSE(run_status(make_node("SpaceToDepth", 1, 1, {{"blocksize", ai(2)}}), {pattern(DataType::kFloat32, {4, 4})}).ok());
  auto r = infer(make_node("DepthToSpace", 1, 1, {{"blocksize", ai(2)}}), {info(DataType::kFloat32, {-1, 8, -1, 5})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 2, -1, 10}));
  r = infer(make_node("SpaceToDepth", 1, 1, {{"blocksize", ai(2)}}), {info(DataType::kFloat32, {1, -1, 4, -1})});
  EXPECT_EQ(r.outs[0].dims, (Dims{1, -1, 2, -1}));
  r = infer(make_node("SpaceToDepth", 1, 1, {{"blocksize", ai(2)}}), {unranked(DataType::kFloat32)});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1, -1}));
}

}  // namespace
}  // namespace streamrt
