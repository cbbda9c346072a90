#include "compute_test_util.h"
#include "ops/conv.h"

namespace streamrt {
namespace {
using namespace testing;

// A convolution case; spatial vectors have one entry per spatial axis.
struct ConvCase {
  int64_t n = 1, c = 1, m = 1, group = 1;
  Dims in, kernel, strides, dilations, pads;  // pads [begin.., end..]
  std::string auto_pad = "NOTSET";
  bool bias = false;
  bool kernel_attr = true;  // pass kernel_shape (else inferred from W)
};

// Effective begin pads and output size per axis, computed independently of the op.
void geometry(const ConvCase& cc, std::vector<int64_t>& pb, Dims& out) {
  const size_t r = cc.in.size();
  pb.assign(r, 0);
  out.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t ek = (cc.kernel[d] - 1) * cc.dilations[d] + 1, s = cc.strides[d];
    if (cc.auto_pad == "SAME_UPPER" || cc.auto_pad == "SAME_LOWER") {
      out[d] = (cc.in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + ek - cc.in[d]);
      pb[d] = cc.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (cc.auto_pad == "VALID") {
      out[d] = (cc.in[d] - ek) / s + 1;
    } else {
      pb[d] = cc.pads[d];
      out[d] = (cc.in[d] + cc.pads[d] + cc.pads[r + d] - ek) / s + 1;
    }
  }
}

// Direct convolution: for every output element, sum over its group's channels and kernel taps.
std::vector<float> naive_conv(const ConvCase& cc, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, Dims& ydims) {
  std::vector<int64_t> pb;
  Dims out;
  geometry(cc, pb, out);
  // Pad every geometry vector to 3 axes so one loop nest covers 1-D, 2-D and 3-D.
  auto pad3 = [&](const std::vector<int64_t>& v, int64_t fill) {
    std::vector<int64_t> p(v);
    p.resize(3, fill);
    return p;
  };
  auto in = pad3(cc.in, 1), k = pad3(cc.kernel, 1), s = pad3(cc.strides, 1), dl = pad3(cc.dilations, 1);
  auto o = pad3(out, 1), p = pad3(pb, 0);
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  ydims = {cc.n, cc.m};
  ydims.insert(ydims.end(), out.begin(), out.end());
  std::vector<float> y;
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t m = 0; m < cc.m; ++m)
      for (int64_t o0 = 0; o0 < o[0]; ++o0)
        for (int64_t o1 = 0; o1 < o[1]; ++o1)
          for (int64_t o2 = 0; o2 < o[2]; ++o2) {
            double acc = cc.bias ? b[m] : 0.0;
            const int64_t g = m / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    int64_t i0 = o0 * s[0] - p[0] + k0 * dl[0];
                    int64_t i1 = o1 * s[1] - p[1] + k1 * dl[1];
                    int64_t i2 = o2 * s[2] - p[2] + k2 * dl[2];
                    if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                    const int64_t c = g * cg + ci;
                    double xv = x[(((n * cc.c + c) * in[0] + i0) * in[1] + i1) * in[2] + i2];
                    double wv = w[(((m * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2];
                    acc += xv * wv;
                  }
            y.push_back(static_cast<float>(acc));
          }
  return y;
}

ir::Node conv_node(const ConvCase& cc, int opset = 11) {
  std::map<std::string, ir::Attribute> attrs = {{"group", int_attr(cc.group)},
                                                {"strides", ints(cc.strides)},
                                                {"dilations", ints(cc.dilations)}};
  if (cc.kernel_attr) attrs["kernel_shape"] = ints(cc.kernel);
  if (cc.auto_pad == "NOTSET") attrs["pads"] = ints(cc.pads);
  else attrs["auto_pad"] = str(cc.auto_pad);
  return make_node("Conv", cc.bias ? 3 : 2, 1, attrs, opset);
}

void check_case(const ConvCase& cc, DataType t, uint32_t seed) {
  Dims xd = {cc.n, cc.c}, wd = {cc.m, cc.c / cc.group};
  xd.insert(xd.end(), cc.in.begin(), cc.in.end());
  wd.insert(wd.end(), cc.kernel.begin(), cc.kernel.end());
  auto x = rounded(t, random_values(numel(xd), seed)), w = rounded(t, random_values(numel(wd), seed + 1));
  auto b = rounded(t, random_values(cc.m, seed + 2));
  std::vector<Tensor> ins = {float_tensor(t, xd, x), float_tensor(t, wd, w)};
  if (cc.bias) ins.push_back(float_tensor(t, {cc.m}, b));
  auto out = run_ok(conv_node(cc), ins);
  ASSERT_EQ(out.size(), 1u);
  Dims want_dims;
  auto want = naive_conv(cc, x, w, b, want_dims);
  EXPECT_EQ(out[0].dims(), want_dims);
  EXPECT_EQ(out[0].dtype(), t);
  expect_close(values_f32(out[0]), want, t);
}

std::vector<ConvCase> cases() {
  std::vector<ConvCase> v;
  auto add = [&](ConvCase c) { v.push_back(std::move(c)); };
  // 1-D
  add({.n = 2, .c = 3, .m = 4, .in = {11}, .kernel = {3}, .strides = {1}, .dilations = {1}, .pads = {1, 1}, .bias = true});
  add({.c = 4, .m = 6, .group = 2, .in = {17}, .kernel = {5}, .strides = {3}, .dilations = {2}, .pads = {0, 2}});
  // 2-D: plain, strided asymmetric pads, dilated, grouped, depthwise, pointwise, auto_pad
  add({.c = 3, .m = 5, .in = {7, 6}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}});
  add({.n = 2, .c = 2, .m = 3, .in = {9, 8}, .kernel = {3, 2}, .strides = {2, 3}, .dilations = {1, 1},
       .pads = {1, 0, 2, 1}, .bias = true});
  add({.c = 2, .m = 2, .in = {10, 9}, .kernel = {3, 3}, .strides = {1, 2}, .dilations = {2, 3}, .pads = {2, 1, 2, 1}});
  add({.c = 6, .m = 9, .group = 3, .in = {6, 7}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1},
       .pads = {1, 1, 1, 1}, .bias = true});
  add({.n = 2, .c = 5, .m = 5, .group = 5, .in = {8, 8}, .kernel = {3, 3}, .strides = {2, 2}, .dilations = {1, 1},
       .pads = {1, 1, 1, 1}, .bias = true});  // depthwise
  add({.c = 4, .m = 8, .group = 4, .in = {5, 5}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1},
       .pads = {1, 1, 1, 1}});  // depthwise, multiplier 2
  add({.n = 3, .c = 8, .m = 4, .in = {5, 6}, .kernel = {1, 1}, .strides = {1, 1}, .dilations = {1, 1},
       .pads = {0, 0, 0, 0}, .bias = true});  // pointwise fast path
  add({.c = 3, .m = 2, .in = {5, 6}, .kernel = {1, 1}, .strides = {2, 2}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}});
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    add({.c = 2, .m = 3, .in = {7, 8}, .kernel = {4, 3}, .strides = {2, 3}, .dilations = {1, 1}, .pads = {}, .auto_pad = ap});
    add({.c = 2, .m = 2, .in = {9}, .kernel = {2}, .strides = {1}, .dilations = {2}, .pads = {}, .auto_pad = ap});
  }
  add({.c = 3, .m = 4, .in = {6, 7}, .kernel = {2, 3}, .strides = {1, 2}, .dilations = {1, 1}, .pads = {1, 0, 0, 1},
       .kernel_attr = false});
  // 3-D
  add({.c = 2, .m = 3, .in = {5, 6, 4}, .kernel = {3, 3, 2}, .strides = {1, 2, 1}, .dilations = {1, 1, 2},
       .pads = {1, 0, 1, 1, 1, 0}, .bias = true});
  add({.n = 2, .c = 4, .m = 4, .group = 2, .in = {4, 4, 4}, .kernel = {2, 2, 2}, .strides = {2, 2, 2},
       .dilations = {1, 1, 1}, .pads = {0, 0, 0, 0, 0, 0}});
  return v;
}

TEST(Conv, MatchesDirectConvolution) {
  uint32_t seed = 1;
  for (const ConvCase& cc : cases()) {
    SCOPED_TRACE(::testing::Message() << "in " << dims_to_string(cc.in) << " kernel " << dims_to_string(cc.kernel)
                                      << " group " << cc.group << " auto_pad " << cc.auto_pad);
    check_case(cc, DataType::kFloat32, seed += 3);
  }
}

TEST(Conv, HalfPrecisionPaths) {
  auto all = cases();
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    check_case(all[3], t, 50);
    check_case(all[6], t, 60);
  }
}

TEST(Conv, HandComputed) {
  // 3x3 input 1..9, 2x2 kernel of ones, no pads: sums of each 2x2 block.
  ConvCase cc{.in = {3, 3}, .kernel = {2, 2}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}};
  auto out = run_ok(conv_node(cc), {f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), f32({1, 1, 2, 2}, {1, 1, 1, 1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{12, 16, 24, 28}));
}

TEST(Conv, InferKeepsDynamicDims) {
  ConvCase cc{.c = 3, .m = 8, .in = {-1, 32}, .kernel = {3, 3}, .strides = {1, 2}, .dilations = {1, 1}, .pads = {1, 1, 1, 1}};
  auto r = infer_only(conv_node(cc), {{DataType::kFloat32, {-1, 3, -1, 32}}, {DataType::kFloat32, {8, 3, 3, 3}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 8, -1, 16}));
  // Unknown-rank X: rank and M come from W.
  r = infer_only(conv_node(cc), {{DataType::kFloat32, {}, false}, {DataType::kFloat32, {8, 3, 3, 3}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 8, -1, -1}));
  // SAME output size does not need the kernel.
  cc.auto_pad = "SAME_UPPER";
  cc.kernel_attr = false;
  r = infer_only(conv_node(cc), {{DataType::kFloat32, {1, 3, 9, 32}}, {DataType::kFloat32, {8, 3, -1, -1}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{1, 8, 9, 16}));
  // Nothing known: unranked.
  r = infer_only(conv_node(cc), {{DataType::kFloat32, {}, false}, {DataType::kFloat32, {}, false}});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

Status run_status(const ConvCase& cc, const Dims& xd, const Dims& wd, const Dims* bd = nullptr) {
  std::vector<Tensor> ins = {f32(xd, random_values(numel(xd), 1)), f32(wd, random_values(numel(wd), 2))};
  if (bd) ins.push_back(f32(*bd, random_values(numel(*bd), 3)));
  ConvCase c2 = cc;
  c2.bias = bd != nullptr;
  auto r = ops::evaluate_on_host(conv_node(c2), ins);
  return r.ok() ? ok_status() : r.status();
}

TEST(Conv, RejectsBadInputs) {
  ConvCase cc{.c = 4, .m = 4, .in = {5, 5}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1}, .pads = {0, 0, 0, 0}};
  EXPECT_TRUE(run_status(cc, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  // Channel mismatch: X has 3 channels, W expects 4.
  Status st = run_status(cc, {1, 3, 5, 5}, {4, 4, 3, 3});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("channels"), std::string::npos) << st.message();
  // kernel_shape disagrees with W.
  st = run_status(cc, {1, 4, 5, 5}, {4, 4, 2, 3});
  EXPECT_NE(st.message().find("kernel_shape"), std::string::npos) << st.message();
  // kernel_shape of the wrong length.
  ConvCase bad_len = cc;
  bad_len.kernel = {3};
  EXPECT_FALSE(run_status(bad_len, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  // Group that does not divide the channels.
  ConvCase grouped = cc;
  grouped.group = 3;
  EXPECT_FALSE(run_status(grouped, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  grouped.group = 0;
  EXPECT_FALSE(run_status(grouped, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  // Bias of the wrong size.
  Dims bias = {3};
  EXPECT_FALSE(run_status(cc, {1, 4, 5, 5}, {4, 4, 3, 3}, &bias).ok());
  // Input smaller than the kernel.
  EXPECT_FALSE(run_status(cc, {1, 4, 2, 5}, {4, 4, 3, 3}).ok());
  // W rank differs from X rank; X of rank 2.
  EXPECT_FALSE(run_status(cc, {1, 4, 5, 5}, {4, 4, 3}).ok());
  EXPECT_FALSE(run_status(cc, {4, 5}, {4, 4, 3, 3}).ok());
  // Bad strides / negative pads / unknown auto_pad.
  ConvCase bad = cc;
  bad.strides = {0, 1};
  EXPECT_FALSE(run_status(bad, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  bad = cc;
  bad.pads = {-1, 0, 0, 0};
  EXPECT_FALSE(run_status(bad, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  bad = cc;
  bad.auto_pad = "SAME";
  EXPECT_FALSE(run_status(bad, {1, 4, 5, 5}, {4, 4, 3, 3}).ok());
  // Unsupported dtype.
  auto r = ops::evaluate_on_host(conv_node(cc), {i64({1, 4, 5, 5}, std::vector<int64_t>(100)),
                                                 i64({4, 4, 3, 3}, std::vector<int64_t>(144))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
}


// ---------------------------------------------------------------------------------------
// The fused epilogue (ops/conv.h): Y = act(conv + B + R)

ir::Node epilogue_node(const ConvCase& cc, bool residual, bool relu) {
  ir::Node n = conv_node(cc);
  if (residual) {
    n.inputs = {0, 1, cc.bias ? 2 : ir::kNoValue, 3};
    n.outputs = {4};
    n.attrs[ops::kConvResidualAttr] = int_attr(1);
  }
  if (relu) n.attrs[ops::kConvActivationAttr] = str("Relu");
  return n;
}

TEST(ConvEpilogue, ResidualAndReluMatchTheNaiveSum) {
  const ConvCase base{.n = 2, .c = 3, .m = 4, .in = {5, 6}, .kernel = {3, 3}, .strides = {1, 2}, .dilations = {1, 1},
                      .pads = {1, 0, 1, 1}};
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (bool bias : {false, true})
      for (bool residual : {false, true})
        for (bool relu : {false, true}) {
          SCOPED_TRACE(::testing::Message() << dtype_name(t) << " bias " << bias << " residual " << residual
                                            << " relu " << relu);
          ConvCase cc = base;
          cc.bias = bias;
          Dims xd = {cc.n, cc.c, 5, 6}, wd = {cc.m, cc.c, 3, 3};
          auto x = rounded(t, random_values(numel(xd), 31)), w = rounded(t, random_values(numel(wd), 32));
          auto b = rounded(t, random_values(cc.m, 33));
          Dims yd;
          std::vector<float> want = naive_conv(cc, x, w, b, yd);
          auto r = rounded(t, random_values(numel(yd), 34));
          for (size_t i = 0; i < want.size(); ++i) {
            if (residual) want[i] += r[i];
            if (relu) want[i] = std::max(want[i], 0.f);
          }
          std::vector<Tensor> ins = {float_tensor(t, xd, x), float_tensor(t, wd, w),
                                     bias ? float_tensor(t, {cc.m}, b) : Tensor()};
          if (residual) ins.push_back(float_tensor(t, yd, r));
          auto out = run_ok(epilogue_node(cc, residual, relu), ins);
          ASSERT_EQ(out.size(), 1u);
          EXPECT_EQ(out[0].dims(), yd);
          expect_close(values_f32(out[0]), want, t);
        }
}

Status epilogue_status(ir::Node n, std::vector<Tensor> extra, const Dims& r = {1, 4, 5, 5}) {
  ConvCase cc{.c = 4, .m = 4, .in = {5, 5}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1},
              .pads = {1, 1, 1, 1}};
  std::vector<Tensor> ins = {f32({1, 4, 5, 5}, random_values(100, 1)), f32({4, 4, 3, 3}, random_values(144, 2)),
                             Tensor()};
  if (!r.empty()) ins.push_back(f32(r, random_values(numel(r), 3)));
  for (Tensor& t : extra) ins.push_back(std::move(t));
  auto res = ops::evaluate_on_host(n, ins);
  return res.ok() ? ok_status() : res.status();
}

TEST(ConvEpilogue, RejectsInconsistentAttributesAndInputs) {
  const ConvCase cc{.c = 4, .m = 4, .in = {5, 5}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1},
                    .pads = {1, 1, 1, 1}};
  const ir::Node good = epilogue_node(cc, true, true);
  EXPECT_TRUE(epilogue_status(good, {}).ok());
  auto expect_bad = [](Status st, StatusCode code, const std::string& words) {
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  };
  // __residual without R; R without __residual.
  expect_bad(epilogue_status(good, {}, {}), StatusCode::kInvalidModel, "input 3 (R) is missing");
  ir::Node n = good;
  n.attrs.erase(ops::kConvResidualAttr);
  expect_bad(epilogue_status(n, {}), StatusCode::kInvalidModel, "without __residual");
  // Wrong values and kinds.
  n = good;
  n.attrs[ops::kConvResidualAttr] = int_attr(2);
  expect_bad(epilogue_status(n, {}), StatusCode::kInvalidModel, "expected 0 or 1");
  n.attrs[ops::kConvResidualAttr] = str("yes");
  EXPECT_FALSE(epilogue_status(n, {}).ok());
  n = good;
  n.attrs[ops::kConvActivationAttr] = str("Gelu");
  expect_bad(epilogue_status(n, {}), StatusCode::kUnsupported, "'Gelu' (only Relu)");
  n.attrs[ops::kConvActivationAttr] = int_attr(1);
  EXPECT_FALSE(epilogue_status(n, {}).ok());
  // R of another shape (no broadcasting) or type; a fifth input.
  expect_bad(epilogue_status(good, {}, {1, 4, 1, 1}), StatusCode::kInvalidModel, "residual R has shape");
  expect_bad(epilogue_status(good, {}, {1, 4, 5}), StatusCode::kInvalidModel, "residual R has shape");
  std::vector<Tensor> ins = {f32({1, 4, 5, 5}, random_values(100, 1)), f32({4, 4, 3, 3}, random_values(144, 2)),
                             Tensor(), i64({1, 4, 5, 5}, std::vector<int64_t>(100))};
  auto r = ops::evaluate_on_host(good, ins);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 3 has type int64"), std::string::npos) << r.status().message();
  n = good;
  n.inputs.push_back(5);
  expect_bad(epilogue_status(n, {f32({1}, {0.f})}), StatusCode::kInvalidModel, "has 5 inputs");
}

TEST(ConvEpilogue, InferTakesKnownDimsFromTheResidual) {
  ConvCase cc{.c = 3, .m = 8, .in = {8, 8}, .kernel = {3, 3}, .strides = {1, 1}, .dilations = {1, 1},
              .pads = {1, 1, 1, 1}};
  const ir::Node n = epilogue_node(cc, true, false);
  const InInfo x{DataType::kFloat32, {-1, 3, -1, 8}}, w{DataType::kFloat32, {8, 3, 3, 3}}, none{DataType::kUndefined, {}};
  auto r = infer_only(n, {x, w, none, {DataType::kFloat32, {4, 8, 8, -1}}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{4, 8, 8, 8}));
  r = infer_only(n, {x, w, none, {DataType::kFloat32, {}, false}});  // R of unknown rank
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 8, -1, 8}));
  EXPECT_FALSE(infer_only(n, {x, w, none, {DataType::kFloat32, {4, 9, 8, 8}}}).ok());  // 9 maps, not 8
  EXPECT_FALSE(infer_only(n, {x, w, none, {DataType::kFloat32, {4, 8, 8}}}).ok());
}

}  // namespace
}  // namespace streamrt
