#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: element i is normalized together with every element whose coordinates agree
// with i's on all axes outside `group` (the normalized axes). O(n^2), fine for small tensors.
std::vector<double> softmax_ref(const std::vector<float>& x, const Dims& dims,
                                const std::vector<bool>& group, bool log) {
  const int64_t n = static_cast<int64_t>(x.size());
  auto coords = [&](int64_t i) {
    Dims c(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
      c[d] = i % dims[d];
      i /= dims[d];
    }
    return c;
  };
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < n; ++i) {
    Dims ci = coords(i);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      Dims cj = coords(j);
      bool same = true;
      for (size_t d = 0; d < dims.size(); ++d) same = same && (group[d] || ci[d] == cj[d]);
      if (same) sum += std::exp(static_cast<double>(x[j]));
    }
    out[i] = log ? x[i] - std::log(sum) : std::exp(static_cast<double>(x[i])) / sum;
  }
  return out;
}

std::vector<float> ramp(size_t n, float scale = 0.37f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<float>(i) * scale) * 3.f;
  return v;
}

TEST(Softmax, Opset13DefaultAxisIsLast) {
  auto x = ramp(6);
  auto out = run_ok(make_node("Softmax", 1, 1, {}, 13), {f32({2, 3}, x)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  expect_close(values_f32(out[0]), softmax_ref(x, {2, 3}, {false, true}, false));
}

TEST(Softmax, Opset13EachAxisOf3D) {
  auto x = ramp(60);
  for (int64_t axis : {0, 1, 2, -1, -2, -3}) {
    std::vector<bool> group(3, false);
    group[(axis + 3) % 3] = true;
    auto out = run_ok(make_node("Softmax", 1, 1, {{"axis", attr_i(axis)}}, 13), {f32({3, 4, 5}, x)});
    ASSERT_EQ(out.size(), 1u) << "axis " << axis;
    expect_close(values_f32(out[0]), softmax_ref(x, {3, 4, 5}, group, false));
  }
}

TEST(Softmax, LegacyOpsetCoercesTo2D) {
  auto x = ramp(24);
  // Opset 11, default axis 1: each batch row of 3*4 elements is one distribution.
  auto out = run_ok(make_node("Softmax", 1, 1, {}, 11), {f32({2, 3, 4}, x)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3, 4}));
  expect_close(values_f32(out[0]), softmax_ref(x, {2, 3, 4}, {false, true, true}, false));
  // axis 2 at opset 1: rows of 4.
  out = run_ok(make_node("Softmax", 1, 1, {{"axis", attr_i(2)}}, 1), {f32({2, 3, 4}, x)});
  expect_close(values_f32(out[0]), softmax_ref(x, {2, 3, 4}, {false, false, true}, false));
  // axis 0: the whole tensor is one distribution.
  out = run_ok(make_node("Softmax", 1, 1, {{"axis", attr_i(0)}}, 11), {f32({2, 3, 4}, x)});
  expect_close(values_f32(out[0]), softmax_ref(x, {2, 3, 4}, {true, true, true}, false));
}

TEST(Softmax, LegacyAndOpset13DifferOnTheSameAxis) {
  auto x = ramp(24);
  auto a = run_ok(make_node("Softmax", 1, 1, {{"axis", attr_i(1)}}, 11), {f32({2, 3, 4}, x)});
  auto b = run_ok(make_node("Softmax", 1, 1, {{"axis", attr_i(1)}}, 13), {f32({2, 3, 4}, x)});
  expect_close(values_f32(b[0]), softmax_ref(x, {2, 3, 4}, {false, true, false}, false));
  EXPECT_NE(values_f32(a[0]), values_f32(b[0]));
}

TEST(Softmax, LargeNumbersStayFinite) {
  // softmax is shift invariant: [1000..1003] behaves like [0..3].
  auto out = run_ok(make_node("Softmax", 1, 1, {}, 13),
                    {f32({2, 4}, {0, 1, 2, 3, 10000, 10001, 10002, 10003})});
  auto ref = softmax_ref({0, 1, 2, 3}, {4}, {true}, false);
  std::vector<double> want(ref);
  want.insert(want.end(), ref.begin(), ref.end());
  expect_close(values_f32(out[0]), want);
}

TEST(LogSoftmax, MatchesReferenceAndLargeNumbers) {
  auto x = ramp(60);
  auto out = run_ok(make_node("LogSoftmax", 1, 1, {{"axis", attr_i(1)}}, 13), {f32({3, 4, 5}, x)});
  expect_close(values_f32(out[0]), softmax_ref(x, {3, 4, 5}, {false, true, false}, true));
  out = run_ok(make_node("LogSoftmax", 1, 1, {}, 13), {f32({1, 4}, {1000, 1001, 1002, 1003})});
  auto ref = softmax_ref({0, 1, 2, 3}, {4}, {true}, true);
  expect_close(values_f32(out[0]), ref, 1e-5, 1e-4);
}

TEST(LogSoftmax, LegacyDefaultAxisOne) {
  auto x = ramp(24);
  auto out = run_ok(make_node("LogSoftmax", 1, 1, {}, 12), {f32({2, 3, 4}, x)});
  expect_close(values_f32(out[0]), softmax_ref(x, {2, 3, 4}, {false, true, true}, true));
}

TEST(Softmax, HalfTypesComputeInFloat) {
  auto x = ramp(12);
  // Reference on the values as rounded to each type.
  auto xh = values_f32(f16({3, 4}, x));
  auto out = run_ok(make_node("Softmax", 1, 1, {}, 13), {f16({3, 4}, x)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  expect_close(values_f32(out[0]), softmax_ref(xh, {3, 4}, {false, true}, false), 1e-3, 2.5e-3);
  auto xb = values_f32(bf16({3, 4}, x));
  out = run_ok(make_node("LogSoftmax", 1, 1, {}, 13), {bf16({3, 4}, x)});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  expect_close(values_f32(out[0]), softmax_ref(xb, {3, 4}, {false, true}, true), 1e-2, 2e-2);
}

TEST(Softmax, InferKeepsDynamicDimsAndUnknownRank) {
  auto node = make_node("Softmax", 1, 1, {}, 13);
  auto r = infer_infos(node, {known(DataType::kFloat32, {-1, 7})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 7}));
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat32);
  r = infer_infos(node, {unranked(DataType::kFloat16)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
}

TEST(Softmax, RejectsBadAxisAndTypes) {
  auto bad_axis = make_node("Softmax", 1, 1, {{"axis", attr_i(2)}}, 13);
  Status st = run_status(bad_axis, {f32({2, 3}, ramp(6))});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  EXPECT_NE(st.message().find("axis 2"), std::string::npos) << st.message();
  EXPECT_FALSE(infer_infos(bad_axis, {known(DataType::kFloat32, {-1, -1})}).ok());
  // Opset 10 accepts axis == rank (coerced shape [N, 1]) but not beyond; opset 11 does not.
  auto legacy = make_node("Softmax", 1, 1, {{"axis", attr_i(2)}}, 10);
  auto out = run_ok(legacy, {f32({2, 3}, ramp(6))});
  EXPECT_EQ(values_f32(out[0]), std::vector<float>(6, 1.f));
  EXPECT_FALSE(run_status(make_node("Softmax", 1, 1, {{"axis", attr_i(3)}}, 10), {f32({2, 3}, ramp(6))}).ok());
  EXPECT_FALSE(run_status(make_node("Softmax", 1, 1, {{"axis", attr_i(2)}}, 11), {f32({2, 3}, ramp(6))}).ok());
  EXPECT_EQ(run_status(make_node("LogSoftmax", 1, 1, {}, 13), {i64({2}, {1, 2})}).code(),
            StatusCode::kUnsupported);
  // An attribute of the wrong kind is an error, not a crash.
  EXPECT_FALSE(run_status(make_node("Softmax", 1, 1, {{"axis", attr_f(1.f)}}, 13), {f32({2}, {1, 2})}).ok());
}

}  // namespace
}  // namespace streamrt
