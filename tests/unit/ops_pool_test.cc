#include <limits>

#include "compute_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

struct PoolCase {
  Dims x;  // full X dims
  Dims kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// Output size and begin pads per axis, by the ONNX formulas (written out independently).
void geometry(const PoolCase& pc, Dims& out, Dims& pb, Dims& pe) {
  const size_t r = pc.kernel.size();
  out.assign(r, 0);
  pb.assign(r, 0);
  pe.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t in = pc.x[d + 2], s = pc.strides[d], ek = (pc.kernel[d] - 1) * pc.dilations[d] + 1;
    if (pc.auto_pad == "SAME_UPPER" || pc.auto_pad == "SAME_LOWER") {
      out[d] = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + ek - in);
      pb[d] = pc.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
    } else if (pc.auto_pad == "VALID") {
      out[d] = (in - ek) / s + 1;
    } else {
      pb[d] = pc.pads[d];
      pe[d] = pc.pads[r + d];
      const double exact = double(in + pb[d] + pe[d] - ek) / double(s) + 1;
      out[d] = static_cast<int64_t>(pc.ceil_mode ? std::ceil(exact) : std::floor(exact));
      if (pc.ceil_mode && (out[d] - 1) * s >= in + pb[d]) --out[d];  // no window starting in end padding
    }
  }
}

// Direct pooling over 1..3 spatial axes (missing axes padded to size 1).
// Returns {values, argmax flat indices (row-major)}.
std::pair<std::vector<float>, std::vector<int64_t>> naive_pool(const PoolCase& pc, const std::vector<float>& x,
                                                               bool max, Dims& ydims) {
  Dims out, pb, pe;
  geometry(pc, out, pb, pe);
  ydims = {pc.x[0], pc.x[1]};
  ydims.insert(ydims.end(), out.begin(), out.end());
  auto p3 = [](Dims v, int64_t fill) { v.resize(3, fill); return v; };
  Dims in = p3(Dims(pc.x.begin() + 2, pc.x.end()), 1), k = p3(pc.kernel, 1), s = p3(pc.strides, 1);
  Dims dl = p3(pc.dilations, 1), o = p3(out, 1), b = p3(pb, 0), e = p3(pe, 0);
  std::vector<float> y;
  std::vector<int64_t> idx;
  for (int64_t plane = 0; plane < pc.x[0] * pc.x[1]; ++plane)
    for (int64_t o0 = 0; o0 < o[0]; ++o0)
      for (int64_t o1 = 0; o1 < o[1]; ++o1)
        for (int64_t o2 = 0; o2 < o[2]; ++o2) {
          double sum = 0, best = -std::numeric_limits<double>::infinity();
          int64_t arg = 0, valid = 0, padded = 0;
          for (int64_t k0 = 0; k0 < k[0]; ++k0)
            for (int64_t k1 = 0; k1 < k[1]; ++k1)
              for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                const int64_t c[3] = {o0 * s[0] - b[0] + k0 * dl[0], o1 * s[1] - b[1] + k1 * dl[1],
                                      o2 * s[2] - b[2] + k2 * dl[2]};
                bool inside = true, in_pad = true;
                for (int d = 0; d < 3; ++d) {
                  inside = inside && c[d] >= 0 && c[d] < in[d];
                  in_pad = in_pad && c[d] >= -b[d] && c[d] < in[d] + e[d];
                }
                padded += in_pad;
                if (!inside) continue;
                const int64_t off = ((plane * in[0] + c[0]) * in[1] + c[1]) * in[2] + c[2];
                ++valid;
                sum += x[off];
                if (x[off] > best) best = x[off], arg = off;
              }
          y.push_back(static_cast<float>(max ? best : sum / double(pc.count_include_pad ? padded : valid)));
          idx.push_back(arg);
        }
  return {y, idx};
}

ir::Node pool_node(const std::string& op, const PoolCase& pc, size_t outputs = 1) {
  std::map<std::string, ir::Attribute> a = {{"kernel_shape", ints(pc.kernel)}, {"strides", ints(pc.strides)},
                                            {"ceil_mode", int_attr(pc.ceil_mode)}};
  if (op == "MaxPool") a["dilations"] = ints(pc.dilations);
  else a["count_include_pad"] = int_attr(pc.count_include_pad);
  if (pc.auto_pad == "NOTSET") a["pads"] = ints(pc.pads);
  else a["auto_pad"] = str(pc.auto_pad);
  return make_node(op, 1, outputs, a, 12);
}

std::vector<PoolCase> cases() {
  return {
      {.x = {2, 3, 13}, .kernel = {3}, .strides = {2}, .dilations = {1}, .pads = {1, 1}},
      {.x = {1, 2, 10}, .kernel = {2}, .strides = {3}, .dilations = {2}, .pads = {0, 1}, .ceil_mode = true},
      {.x = {1, 2, 7, 8}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}},
      {.x = {2, 2, 9, 8}, .kernel = {3, 2}, .strides = {2, 3}, .dilations = {1, 1}, .pads = {1, 0, 2, 1}},
      {.x = {1, 3, 8, 7}, .kernel = {3, 3}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {1, 1, 1, 1},
       .ceil_mode = true, .count_include_pad = true},
      {.x = {1, 1, 5, 5}, .kernel = {2, 2}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {1, 1, 1, 1},
       .ceil_mode = true},  // last window would start in the end padding: dropped
      {.x = {1, 2, 9, 9}, .kernel = {2, 3}, .strides = {1, 2}, .dilations = {2, 2}, .pads = {1, 2, 1, 2},
       .count_include_pad = true},
      {.x = {1, 2, 7, 8}, .kernel = {3, 2}, .strides = {2, 3}, .dilations = {1, 1}, .pads = {}, .auto_pad = "SAME_UPPER"},
      {.x = {1, 2, 7, 8}, .kernel = {4, 2}, .strides = {2, 1}, .dilations = {1, 1}, .pads = {}, .auto_pad = "SAME_LOWER",
       .count_include_pad = true},
      {.x = {1, 2, 7, 8}, .kernel = {3, 3}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {}, .auto_pad = "VALID"},
      {.x = {1, 2, 5, 6, 4}, .kernel = {2, 3, 2}, .strides = {1, 2, 2}, .dilations = {1, 1, 1}, .pads = {1, 0, 0, 0, 1, 1}},
      {.x = {2, 1, 6, 5, 5}, .kernel = {3, 2, 2}, .strides = {2, 2, 2}, .dilations = {1, 1, 1}, .pads = {0, 0, 0, 0, 0, 0},
       .ceil_mode = true},
  };
}

TEST(MaxPool, MatchesDirectPoolingWithIndices) {
  uint32_t seed = 1;
  for (const PoolCase& pc : cases()) {
    SCOPED_TRACE("X " + dims_to_string(pc.x) + " kernel " + dims_to_string(pc.kernel) + " " + pc.auto_pad);
    auto x = random_values(numel(pc.x), seed++);
    auto out = run_ok(pool_node("MaxPool", pc, 2), {f32(pc.x, x)});
    ASSERT_EQ(out.size(), 2u);
    Dims yd;
    auto [want, want_idx] = naive_pool(pc, x, true, yd);
    EXPECT_EQ(out[0].dims(), yd);
    EXPECT_EQ(out[1].dims(), yd);
    EXPECT_EQ(out[1].dtype(), DataType::kInt64);
    EXPECT_EQ(values_f32(out[0]), want);
    EXPECT_EQ(values_i64(out[1]), want_idx);
  }
}

TEST(AveragePool, MatchesDirectPooling) {
  uint32_t seed = 40;
  for (const PoolCase& pc : cases()) {
    SCOPED_TRACE("X " + dims_to_string(pc.x) + " kernel " + dims_to_string(pc.kernel) + " " + pc.auto_pad);
    auto x = random_values(numel(pc.x), seed++);
    PoolCase avg = pc;
    std::fill(avg.dilations.begin(), avg.dilations.end(), 1);  // AveragePool dilations are opset 19+
    auto out = run_ok(pool_node("AveragePool", avg, 1), {f32(pc.x, x)});
    Dims yd;
    auto want = naive_pool(avg, x, false, yd).first;
    EXPECT_EQ(out[0].dims(), yd);
    expect_close(values_f32(out[0]), want);
  }
}

TEST(AveragePool, DilationsFromOpset19) {
  PoolCase pc = cases()[6];
  auto x = random_values(numel(pc.x), 9);
  auto node = pool_node("AveragePool", pc);
  node.attrs["dilations"] = ints(pc.dilations);
  node.opset = 19;
  auto out = run_ok(node, {f32(pc.x, x)});
  Dims yd;
  expect_close(values_f32(out[0]), naive_pool(pc, x, false, yd).first);
}

TEST(MaxPool, HandComputedIndicesAndStorageOrder) {
  // 3x3 input, 2x2 kernel, stride 1: maxima at (1,1)=4 etc.
  PoolCase pc{.x = {1, 1, 3, 3}, .kernel = {2, 2}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}};
  auto x = f32({1, 1, 3, 3}, {9, 1, 2, 3, 4, 8, 5, 6, 7});
  auto out = run_ok(pool_node("MaxPool", pc, 2), {x});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{9, 8, 6, 8}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{0, 5, 7, 5}));
  auto node = pool_node("MaxPool", pc, 2);
  node.attrs["storage_order"] = int_attr(1);  // column-major: (h, w) -> h + w * H
  out = run_ok(node, {x});
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{0, 7, 5, 7}));
}

TEST(AveragePool, HandComputedPadding) {
  // 1-D [1,2,3,4], kernel 2, stride 2, pads 1/1: windows {pad,1},{2,3},{4,pad}.
  PoolCase pc{.x = {1, 1, 4}, .kernel = {2}, .strides = {2}, .dilations = {1}, .pads = {1, 1}};
  auto x = f32({1, 1, 4}, {1, 2, 3, 4});
  EXPECT_EQ(values_f32(run_ok(pool_node("AveragePool", pc), {x})[0]), (std::vector<float>{1, 2.5f, 4}));
  pc.count_include_pad = true;
  EXPECT_EQ(values_f32(run_ok(pool_node("AveragePool", pc), {x})[0]), (std::vector<float>{0.5f, 2.5f, 2}));
}

TEST(MaxPool, IntegerAndHalfTypes) {
  PoolCase pc = cases()[3];
  auto x = random_values(numel(pc.x), 77);
  Dims yd;
  auto want = naive_pool(pc, x, true, yd).first;
  // uint8 / int8: scale into range and compare exactly.
  for (DataType t : {DataType::kUInt8, DataType::kInt8}) {
    std::vector<float> xi(x.size()), wi(want.size());
    auto conv = [&](float v) { return t == DataType::kUInt8 ? std::round((v + 1) * 100) : std::round(v * 100); };
    for (size_t i = 0; i < x.size(); ++i) xi[i] = conv(x[i]);
    for (size_t i = 0; i < want.size(); ++i) wi[i] = conv(want[i]);
    Tensor xt = t == DataType::kUInt8
                    ? Tensor::from_vector(t, pc.x, std::vector<uint8_t>(xi.begin(), xi.end()))
                    : Tensor::from_vector(t, pc.x, std::vector<int8_t>(xi.begin(), xi.end()));
    auto out = run_ok(pool_node("MaxPool", pc), {xt});
    EXPECT_EQ(out[0].dtype(), t);
    EXPECT_EQ(values_f32(out[0]), wi) << dtype_name(t);
  }
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    auto xr = rounded(t, x);
    auto out = run_ok(pool_node("MaxPool", pc), {float_tensor(t, pc.x, xr)});
    EXPECT_EQ(values_f32(out[0]), naive_pool(pc, xr, true, yd).first) << dtype_name(t);
    out = run_ok(pool_node("AveragePool", pc), {float_tensor(t, pc.x, xr)});
    expect_close(values_f32(out[0]), naive_pool(pc, xr, false, yd).first, t);
  }
}

TEST(Pool, InferKeepsDynamicDims) {
  PoolCase pc{.x = {}, .kernel = {3, 3}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {1, 1, 1, 1}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    auto r = infer_only(pool_node(op, pc, op == std::string("MaxPool") ? 2 : 1), {{DataType::kFloat32, {-1, 16, -1, 32}}});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims, (Dims{-1, 16, -1, 16}));
    if (r->size() == 2) {
      EXPECT_EQ((*r)[1].dtype, DataType::kInt64);
    }
    r = infer_only(pool_node(op, pc), {{DataType::kFloat32, {}, false}});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].dims, (Dims{-1, -1, -1, -1}));
  }
}

TEST(Pool, RejectsBadAttributes) {
  PoolCase pc{.x = {1, 1, 5, 5}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}};
  auto x = f32(pc.x, random_values(25, 1));
  for (const char* op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    auto node = pool_node(op, pc);
    node.attrs.erase("kernel_shape");
    EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
    node = pool_node(op, pc);
    node.attrs["kernel_shape"] = ints({3, 0});
    EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
    node.attrs["kernel_shape"] = ints({3, 3, 3});  // rank disagrees with X
    EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
    node = pool_node(op, pc);
    node.attrs["strides"] = ints({1});
    EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
    node = pool_node(op, pc);
    node.attrs["kernel_shape"] = ints({7, 7});  // larger than the input
    auto r = ops::evaluate_on_host(node, {x});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("smaller than"), std::string::npos) << r.status().message();
    node = pool_node(op, pc);
    node.attrs["auto_pad"] = str("BOGUS");
    EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
  }
  auto node = pool_node("MaxPool", pc);
  node.attrs["storage_order"] = int_attr(2);
  EXPECT_FALSE(ops::evaluate_on_host(node, {x}).ok());
  auto r = ops::evaluate_on_host(pool_node("AveragePool", pc), {i64(pc.x, std::vector<int64_t>(25))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace streamrt
