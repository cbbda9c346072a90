// The dtypes added after the first eight (float64, int16, uint16, uint32, uint64) through the
// CPU kernels: the Cast matrix over every pair, element-wise arithmetic / comparison / variadic
// ops, Where, Abs / Neg and the reductions. Expected values are computed here independently
// (plain C++ on the same inputs, or written out by hand).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;  // NOLINT: the op test helpers
using ir::Attribute;

constexpr DataType kEveryDtype[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt64,
                                    DataType::kInt32,   DataType::kInt8,    DataType::kUInt8,    DataType::kBool,
                                    DataType::kFloat64, DataType::kInt16,   DataType::kUInt16,   DataType::kUInt32,
                                    DataType::kUInt64};

// ONNX TensorProto numbers of kEveryDtype, in the same order (written out, not computed).
constexpr int64_t kOnnxNumber[] = {1, 10, 16, 7, 6, 3, 2, 9, 11, 5, 4, 12, 13};

template <typename T>
Tensor tensor_of(DataType t, const std::vector<T>& v) {
  return Tensor::from_vector(t, {static_cast<int64_t>(v.size())}, v);
}
Tensor f64(const std::vector<double>& v) { return tensor_of(DataType::kFloat64, v); }
Tensor i16(const std::vector<int16_t>& v) { return tensor_of(DataType::kInt16, v); }
Tensor u16(const std::vector<uint16_t>& v) { return tensor_of(DataType::kUInt16, v); }
Tensor u32(const std::vector<uint32_t>& v) { return tensor_of(DataType::kUInt32, v); }
Tensor u64(const std::vector<uint64_t>& v) { return tensor_of(DataType::kUInt64, v); }

// A tensor of dtype `t` holding `v` (small non-negative integers: exact in every dtype).
Tensor small_values(DataType t, const std::vector<int>& v) {
  Tensor out = Tensor::allocate(t, {static_cast<int64_t>(v.size())}).value();
  void* p = out.mutable_data();
  for (size_t i = 0; i < v.size(); ++i) {
    const int x = v[i];
    switch (t) {
      case DataType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(x); break;
      case DataType::kFloat64: static_cast<double*>(p)[i] = x; break;
      case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = Half::from_float(static_cast<float>(x)); break;
      case DataType::kBFloat16: static_cast<uint16_t*>(p)[i] = BFloat16::from_float(static_cast<float>(x)); break;
      case DataType::kInt64: static_cast<int64_t*>(p)[i] = x; break;
      case DataType::kInt32: static_cast<int32_t*>(p)[i] = x; break;
      case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(x); break;
      case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(x); break;
      case DataType::kUInt8: case DataType::kBool: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(x); break;
      case DataType::kUInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(x); break;
      case DataType::kUInt32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(x); break;
      case DataType::kUInt64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(x); break;
      default: ADD_FAILURE() << "no such dtype"; break;
    }
  }
  return out;
}

ir::Node cast_to(int64_t onnx_type) { return make_node("Cast", 1, 1, {{"to", Attribute::make_int(onnx_type)}}, 21); }

TEST(DtypeCast, EveryPairConvertsValuesExactInBoth) {
  const std::vector<int> src = {0, 1, 3, 100};
  for (size_t i = 0; i < std::size(kEveryDtype); ++i) {
    const DataType from = kEveryDtype[i];
    // A bool source holds 0 / 1: 3 and 100 are stored as true.
    const std::vector<int> held = from == DataType::kBool ? std::vector<int>{0, 1, 1, 1} : src;
    for (size_t j = 0; j < std::size(kEveryDtype); ++j) {
      const DataType to = kEveryDtype[j];
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      auto out = run_ok(cast_to(kOnnxNumber[j]), {small_values(from, src)});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), to);
      std::vector<double> want(held.begin(), held.end());
      if (to == DataType::kBool) want = {0, 1, 1, 1};
      EXPECT_EQ(out[0].to_double_vector().value(), want);
      // CastLike takes the target type from its second input.
      auto like = run_ok(make_node("CastLike", 2, 1, {}, 21), {small_values(from, src), small_values(to, {0})});
      ASSERT_EQ(like.size(), 1u);
      EXPECT_EQ(like[0].dtype(), to);
      EXPECT_EQ(like[0].to_double_vector().value(), want);
    }
  }
}

TEST(DtypeCast, Float64KeepsDoublePrecision) {
  // 0.1 and 2^53 - 1 are not floats: a detour through float would change them.
  const double big = 9007199254740991.0;
  auto out = run_ok(cast_to(7), {f64({big, -big})});  // -> int64
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{9007199254740991, -9007199254740991}));
  out = run_ok(cast_to(11), {i64({2}, {9007199254740991, int64_t{1} << 62})});  // int64 -> double
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{big, 4611686018427387904.0}));
  out = run_ok(cast_to(11), {u64({18446744073709551615ull})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{18446744073709551616.0}));
  out = run_ok(cast_to(11), {f32({1}, {0.1f})});  // float -> double is exact
  EXPECT_EQ(values_as<double>(out[0])[0], static_cast<double>(0.1f));
  out = run_ok(cast_to(1), {f64({0.1})});  // double -> float rounds once
  EXPECT_EQ(values_f32(out[0])[0], 0.1f);
}

TEST(DtypeCast, DoubleToHalfTypesRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the float16 tie between 1 and 1 + 2^-10. Through float
  // it would first become the tie itself and then round to even (1.0); directly it rounds up.
  const double d16 = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  auto out = run_ok(cast_to(10), {f64({d16, -d16, 65520.0, 1e300, std::nan("")})});
  auto h = out[0].to_double_vector().value();
  EXPECT_EQ(h[0], 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(h[1], -(1.0 + std::ldexp(1.0, -10)));
  EXPECT_TRUE(std::isinf(h[2]) && h[2] > 0);  // 65520 is the first value that rounds to inf
  EXPECT_TRUE(std::isinf(h[3]));
  EXPECT_TRUE(std::isnan(h[4]));
  // The same for bfloat16 (8 significant bits).
  const double d8 = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  out = run_ok(cast_to(16), {f64({d8, 1.0 + std::ldexp(1.0, -8)})});
  EXPECT_EQ(out[0].to_double_vector().value(), (std::vector<double>{1.0 + std::ldexp(1.0, -7), 1.0}));
  // And back: float16 / bfloat16 -> double is exact.
  out = run_ok(cast_to(11), {f16({2}, {0.333251953125f, -65504.f})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{0.333251953125, -65504.0}));
  out = run_ok(cast_to(11), {bf16({1}, {3.140625f})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{3.140625}));
}

TEST(DtypeCast, OutOfRangeSaturatesAndIntegersWrap) {
  auto out = run_ok(cast_to(12), {f64({-5.0, 1e20, 4294967295.9, std::nan("")})});  // -> uint32
  EXPECT_EQ(values_as<uint32_t>(out[0]), (std::vector<uint32_t>{0, 4294967295u, 4294967295u, 0}));
  out = run_ok(cast_to(5), {f32({3}, {-40000.f, 40000.f, -1.9f})});  // -> int16
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{-32768, 32767, -1}));
  out = run_ok(cast_to(13), {f64({1e30, 18446744073709549568.0})});  // -> uint64
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{18446744073709551615ull, 18446744073709549568ull}));
  // Integer to integer wraps modulo 2^bits.
  out = run_ok(cast_to(4), {i64({3}, {70000, -1, 65536})});  // -> uint16
  EXPECT_EQ(values_as<uint16_t>(out[0]), (std::vector<uint16_t>{4464, 65535, 0}));
  out = run_ok(cast_to(7), {u64({18446744073709551615ull})});  // -> int64
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-1}));
  out = run_ok(cast_to(5), {u32({32768u})});  // -> int16
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{-32768}));
}

TEST(DtypeElementwise, IntegerArithmeticWrapsWithoutOverflow) {
  // uint16 * uint16 is int arithmetic in C++ (65535^2 overflows int): it must wrap mod 2^16.
  auto out = run_ok(make_node("Mul", 2), {u16({65535, 300}), u16({65535, 300})});
  EXPECT_EQ(values_as<uint16_t>(out[0]), (std::vector<uint16_t>{1, static_cast<uint16_t>(90000 % 65536)}));
  out = run_ok(make_node("Add", 2), {i16({32767, -32768}), i16({1, -1})});
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{-32768, 32767}));
  out = run_ok(make_node("Sub", 2), {u32({0}), u32({1})});
  EXPECT_EQ(values_as<uint32_t>(out[0]), (std::vector<uint32_t>{4294967295u}));
  out = run_ok(make_node("Mul", 2), {i32({1}, {1 << 30}), i32({1}, {4})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{0}));
  // INT_MIN / -1 wraps to INT_MIN; a zero divisor gives 0 (no trap).
  out = run_ok(make_node("Div", 2), {i32({2}, {INT32_MIN, 7}), i32({2}, {-1, 0})});
  EXPECT_EQ(values_as<int32_t>(out[0]), (std::vector<int32_t>{INT32_MIN, 0}));
  out = run_ok(make_node("Div", 2), {u64({18446744073709551615ull}), u64({2})});
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{9223372036854775807ull}));
}

TEST(DtypeElementwise, Float64ComputesInDouble) {
  auto out = run_ok(make_node("Add", 2), {f64({0.1, 1e15}), f64({0.2, 1.0})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{0.1 + 0.2, 1e15 + 1.0}));
  EXPECT_NE(values_as<double>(out[0])[1], 1e15);  // float would have lost the 1
  out = run_ok(make_node("Div", 2), {f64({1.0}), f64({3.0})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{1.0 / 3.0}));
  out = run_ok(make_node("Pow", 2), {f64({2.0, 10.0}), f64({0.5, -2.0})});
  EXPECT_DOUBLE_EQ(values_as<double>(out[0])[0], std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(values_as<double>(out[0])[1], 0.01);
  EXPECT_NE(values_as<double>(out[0])[0], static_cast<double>(std::sqrt(2.f)));
  // A float64 exponent for a float32 base is read in double too.
  out = run_ok(make_node("Pow", 2), {f32({1}, {4.f}), f64({0.5})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.f}));
  out = run_ok(make_node("Abs", 1), {f64({-1e-300, 2.5})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{1e-300, 2.5}));
  out = run_ok(make_node("Neg", 1), {f64({1e-300})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{-1e-300}));
  out = run_ok(make_node("Relu", 1), {f64({-1e-300, 1e-300})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{0.0, 1e-300}));
}

TEST(DtypeElementwise, AbsNegOnNewIntegers) {
  auto out = run_ok(make_node("Abs", 1), {i16({-32768, -5, 7})});
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{-32768, 5, 7}));  // wraps like numpy
  out = run_ok(make_node("Abs", 1), {u64({18446744073709551615ull})});
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{18446744073709551615ull}));
  out = run_ok(make_node("Neg", 1), {i16({5, -32768})});
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{-5, -32768}));
  // Neg of an unsigned type is not an ONNX signature.
  EXPECT_EQ(run_status(make_node("Neg", 1), {u32({1})}).code(), StatusCode::kUnsupported);
}

TEST(DtypeElementwise, ComparisonsOfLargeUnsignedValues) {
  // Above INT64_MAX: a signed detour would order these the wrong way round.
  const uint64_t big = 18446744073709551615ull;
  auto out = run_ok(make_node("Greater", 2), {u64({big, 1}), u64({1, big})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
  out = run_ok(make_node("Equal", 2), {f64({0.1, std::nan("")}), f64({0.1, std::nan("")})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
  // 0.1 and its float neighbour differ in double.
  out = run_ok(make_node("Less", 2), {f64({0.1}), f64({static_cast<double>(0.1f)})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1}));
  out = run_ok(make_node("LessOrEqual", 2), {i16({-2, 3}), i16({-2, 2})});
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0}));
}

TEST(DtypeElementwise, VariadicAndWhere) {
  const uint64_t big = 18446744073709551615ull;
  auto out = run_ok(make_node("Max", 3), {u64({big, 2}), u64({1, 5}), u64({3, 4})});
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{big, 5}));
  out = run_ok(make_node("Min", 2), {u32({4000000000u, 1}), u32({1, 7})});
  EXPECT_EQ(values_as<uint32_t>(out[0]), (std::vector<uint32_t>{1, 1}));
  out = run_ok(make_node("Sum", 3), {f64({1e15}), f64({1.0}), f64({1.0})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{1e15 + 2.0}));
  out = run_ok(make_node("Mean", 2), {f64({1.0}), f64({0.1})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{(1.0 + 0.1) / 2.0}));
  // Sum of integers is not an ONNX signature.
  EXPECT_EQ(run_status(make_node("Sum", 2), {i16({1}), i16({1})}).code(), StatusCode::kUnsupported);
  out = run_ok(make_node("Where", 3), {boolean({3}, {1, 0, 1}), f64({0.1, 0.2, 0.3}), f64({-1.0, -2.0, -3.0})});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{0.1, -2.0, 0.3}));
  out = run_ok(make_node("Where", 3), {boolean({2}, {0, 1}), u16({1, 2}), u16({65535, 9})});
  EXPECT_EQ(values_as<uint16_t>(out[0]), (std::vector<uint16_t>{65535, 2}));
}

ir::Node reduce(const std::string& op, std::vector<int64_t> axes, int64_t keepdims = 0) {
  return make_node(op, 1, 1, {{"axes", Attribute::make_ints(std::move(axes))}, {"keepdims", Attribute::make_int(keepdims)}},
                   11);
}

TEST(DtypeReduce, Float64AccumulatesInDouble) {
  const Tensor x = Tensor::from_vector(DataType::kFloat64, {2, 3}, std::vector<double>{1e15, 1, 1, 0.1, 0.2, 0.3});
  auto out = run_ok(reduce("ReduceSum", {1}), {x});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat64);
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{1e15 + 2.0, 0.1 + 0.2 + 0.3}));
  out = run_ok(reduce("ReduceMean", {0}), {x});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{(1e15 + 0.1) / 2, (1.0 + 0.2) / 2, (1.0 + 0.3) / 2}));
  // LogSumExp of large values: exp(1000) overflows even double without the max shift.
  const Tensor big = Tensor::from_vector(DataType::kFloat64, {2}, std::vector<double>{1000.0, 1000.0});
  out = run_ok(reduce("ReduceLogSumExp", {0}), {big});
  EXPECT_DOUBLE_EQ(values_as<double>(out[0])[0], 1000.0 + std::log(2.0));
  out = run_ok(reduce("ReduceL2", {1}), {x});
  EXPECT_DOUBLE_EQ(values_as<double>(out[0])[1], std::sqrt(0.1 * 0.1 + 0.2 * 0.2 + 0.3 * 0.3));
  out = run_ok(reduce("ReduceMax", {1}), {x});
  EXPECT_EQ(values_as<double>(out[0]), (std::vector<double>{1e15, 0.3}));
}

TEST(DtypeReduce, UnsignedAndInt16) {
  const uint64_t big = 18446744073709551615ull;
  const Tensor x = Tensor::from_vector(DataType::kUInt64, {2, 2}, std::vector<uint64_t>{big, 1, 3, 2});
  auto out = run_ok(reduce("ReduceMax", {1}), {x});
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{big, 3}));
  out = run_ok(reduce("ReduceMin", {0}), {x});
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{3, 1}));
  out = run_ok(reduce("ReduceSum", {1}), {x});  // wraps modulo 2^64
  EXPECT_EQ(values_as<uint64_t>(out[0]), (std::vector<uint64_t>{0, 5}));
  const Tensor y = Tensor::from_vector(DataType::kUInt32, {3}, std::vector<uint32_t>{4000000000u, 4000000000u, 1});
  out = run_ok(reduce("ReduceMean", {0}), {y});
  EXPECT_EQ(values_as<uint32_t>(out[0]), (std::vector<uint32_t>{2666666667u}));  // 8000000001 / 3
  const Tensor z = Tensor::from_vector(DataType::kInt16, {3}, std::vector<int16_t>{-3, 200, 300});
  out = run_ok(reduce("ReduceProd", {0}), {z});
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{static_cast<int16_t>(-180000 % 65536)}));
  out = run_ok(reduce("ReduceL1", {0}), {z});
  EXPECT_EQ(values_as<int16_t>(out[0]), (std::vector<int16_t>{503}));
  // LogSum of integers is not an ONNX signature.
  EXPECT_EQ(run_status(reduce("ReduceLogSum", {0}), {z}).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace streamrt
