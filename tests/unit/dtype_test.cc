// The dtypes float64, int16, uint16, uint32, uint64 outside the kernels: names and sizes, the
// DTypeSet a dtype falls in, host tensor conversions, ONNX TensorProto fields, import, the
// opset range with per-op minimums, and a plan built and run end to end through the plan
// writer and reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "onnx/importer.h"
#include "onnx/tensor_proto.h"
#include "onnx_model_util.h"
#include "ops/common.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;  // NOLINT: the ONNX model helpers

TEST(Dtypes, NewTypesKeepTheirPlanNumbersAndNames) {
  // The numbering is part of the plan and program formats.
  EXPECT_EQ(static_cast<int>(DataType::kBool), 8);
  EXPECT_EQ(static_cast<int>(DataType::kFloat64), 9);
  EXPECT_EQ(static_cast<int>(DataType::kInt16), 10);
  EXPECT_EQ(static_cast<int>(DataType::kUInt16), 11);
  EXPECT_EQ(static_cast<int>(DataType::kUInt32), 12);
  EXPECT_EQ(static_cast<int>(DataType::kUInt64), 13);
  EXPECT_STREQ(dtype_name(DataType::kFloat64), "float64");
  EXPECT_STREQ(dtype_name(DataType::kUInt16), "uint16");
  EXPECT_EQ(parse_dtype("uint64").value(), DataType::kUInt64);
  EXPECT_EQ(parse_dtype("int16").value(), DataType::kInt16);
  EXPECT_FALSE(parse_dtype("double").ok());
}

TEST(Dtypes, PredicatesKeepFloat64OutOfTheFloatFamily) {
  // is_float is the family the GEMM / conv / fusion paths compute in float: not float64.
  EXPECT_FALSE(is_float(DataType::kFloat64));
  EXPECT_TRUE(is_floating_point(DataType::kFloat64));
  EXPECT_TRUE(is_floating_point(DataType::kBFloat16));
  EXPECT_FALSE(is_floating_point(DataType::kInt16));
  for (DataType t : {DataType::kInt16, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64, DataType::kUInt8})
    EXPECT_TRUE(is_integer(t)) << dtype_name(t);
  EXPECT_FALSE(is_integer(DataType::kBool));
  EXPECT_FALSE(is_integer(DataType::kFloat64));
  EXPECT_TRUE(is_unsigned(DataType::kUInt64));
  EXPECT_FALSE(is_unsigned(DataType::kInt16));

  using namespace ops;
  EXPECT_EQ(dtype_set_of(DataType::kFloat64), unsigned{kFloat64});
  EXPECT_EQ(dtype_set_of(DataType::kFloat16), unsigned{kFloats});
  EXPECT_EQ(dtype_set_of(DataType::kInt16), unsigned{kSignedInts});
  EXPECT_EQ(dtype_set_of(DataType::kUInt32), unsigned{kUnsigned});
  EXPECT_EQ(dtype_set_of(DataType::kUndefined), 0u);
  EXPECT_EQ(kFloats & kFloat64, 0u);  // dispatch<kFloats> never instantiates double
}

TEST(Dtypes, TensorConversionsCoverTheNewTypes) {
  const uint64_t big = 18446744073709551615ull;
  Tensor u = Tensor::from_vector(DataType::kUInt64, {2}, std::vector<uint64_t>{7, big});
  EXPECT_EQ(u.to_double_vector().value(), (std::vector<double>{7.0, 18446744073709551616.0}));
  auto ints = u.to_int64_vector();  // does not fit int64: refused, not wrapped
  EXPECT_FALSE(ints.ok());
  Tensor s = Tensor::from_vector(DataType::kInt16, {2}, std::vector<int16_t>{-3, 32767});
  EXPECT_EQ(s.to_int64_vector().value(), (std::vector<int64_t>{-3, 32767}));
  Tensor d = Tensor::from_vector(DataType::kFloat64, {1}, std::vector<double>{0.1});
  EXPECT_EQ(d.to_double_vector().value()[0], 0.1);
  EXPECT_EQ(d.to_float_vector().value()[0], 0.1f);

  // uint16 bits become bfloat16 only when bfloat16 is wanted; sizes must match to retype.
  Tensor bits = Tensor::from_vector(DataType::kUInt16, {1}, std::vector<uint16_t>{0x3fc0});
  EXPECT_EQ(uint16_bits_as(bits, DataType::kBFloat16).to_double_vector().value()[0], 1.5);
  EXPECT_EQ(uint16_bits_as(bits, DataType::kFloat16).dtype(), DataType::kUInt16);
  EXPECT_EQ(uint16_bits_as(d, DataType::kBFloat16).dtype(), DataType::kFloat64);
  EXPECT_FALSE(bits.retyped(DataType::kFloat32).ok());
  EXPECT_EQ(bits.retyped(DataType::kInt16).value().data(), bits.data());  // shares storage
}

TEST(Dtypes, TensorProtoTypedFieldsAndRawData) {
  using onnx_import::tensor_from_proto;
  onnx::TensorProto p;
  p.set_name("d");
  p.set_data_type(onnx::TensorProto_DataType_DOUBLE);
  p.add_dims(2);
  p.add_double_data(0.1);
  p.add_double_data(-1e300);
  auto t = tensor_from_proto(p, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DataType::kFloat64);
  EXPECT_EQ(t->to_double_vector().value(), (std::vector<double>{0.1, -1e300}));

  // uint32 and uint64 live in uint64_data; int16 and uint16 in int32_data.
  p.Clear();
  p.set_name("u");
  p.set_data_type(onnx::TensorProto_DataType_UINT64);
  p.add_dims(1);
  p.add_uint64_data(18446744073709551615ull);
  t = tensor_from_proto(p, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data_as<uint64_t>()[0], 18446744073709551615ull);
  p.set_data_type(onnx::TensorProto_DataType_UINT32);
  p.set_uint64_data(0, 4000000000ull);
  t = tensor_from_proto(p, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data_as<uint32_t>()[0], 4000000000u);
  p.Clear();
  p.set_name("s");
  p.set_data_type(onnx::TensorProto_DataType_INT16);
  p.add_dims(2);
  p.add_int32_data(-32768);
  p.add_int32_data(12345);
  t = tensor_from_proto(p, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data_as<int16_t>()[0], -32768);
  EXPECT_EQ(t->data_as<int16_t>()[1], 12345);
  p.set_data_type(onnx::TensorProto_DataType_UINT16);
  p.set_int32_data(0, 65535);
  t = tensor_from_proto(p, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data_as<uint16_t>()[0], 65535);
  // Too few values for the shape is a malformed tensor.
  p.clear_int32_data();
  p.add_int32_data(1);
  EXPECT_EQ(tensor_from_proto(p, ".").status().code(), StatusCode::kInvalidModel);

  // raw_data of a double tensor, and the round trip back to ONNX numbering.
  onnx::TensorProto raw = raw_tensor<double>("r", onnx::TensorProto_DataType_DOUBLE, {3}, {1.5, -0.25, 1e-310});
  t = tensor_from_proto(raw, ".");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->to_double_vector().value(), (std::vector<double>{1.5, -0.25, 1e-310}));
  EXPECT_EQ(onnx_import::dtype_to_onnx(DataType::kFloat64), onnx::TensorProto_DataType_DOUBLE);
  EXPECT_EQ(onnx_import::dtype_to_onnx(DataType::kUInt32), onnx::TensorProto_DataType_UINT32);
  EXPECT_EQ(onnx_import::dtype_to_onnx(DataType::kInt16), onnx::TensorProto_DataType_INT16);
}

// y = ReduceMax(Cast(x) + w) over a float64 input and a float64 weight, and z = a + a over
// uint64 / int16 inputs: the new dtypes as graph I/O, weights and activations.
onnx::ModelProto mixed_model(int opset = 13) {
  onnx::ModelProto m = make_model(opset);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_DOUBLE, {int64_t{3}});
  add_input(g, "u", onnx::TensorProto_DataType_UINT64, {int64_t{2}});
  add_input(g, "s", onnx::TensorProto_DataType_INT16, {int64_t{2}});
  add_output(g, "y", onnx::TensorProto_DataType_DOUBLE, {});
  add_output(g, "uu", onnx::TensorProto_DataType_UINT64, {int64_t{2}});
  add_output(g, "h", onnx::TensorProto_DataType_FLOAT16, {int64_t{2}});
  *g->add_initializer() = raw_tensor<double>("w", onnx::TensorProto_DataType_DOUBLE, {3}, {0.1, 0.2, 1e15});
  add_node(g, "Add", "add", {"x", "w"}, {"xw"});
  auto* r = add_node(g, "ReduceMax", "max", {"xw"}, {"y"});
  auto* keep = r->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(0);
  add_node(g, "Add", "uadd", {"u", "u"}, {"uu"});
  auto* c = add_node(g, "Cast", "cast", {"s"}, {"h"});
  auto* to = c->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto_DataType_FLOAT16);
  return m;
}

TEST(Dtypes, PlanWithNewTypesBuildsLoadsAndRuns) {
  TempDir dir;
  const std::string model = dir.file("mixed.onnx");
  write_file(model, serialize(mixed_model()));
  auto bytes = build_plan_from_onnx(model, BuilderConfig{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();

  // The plan reader takes the new dtype numbers back (values and the float64 weight).
  auto loaded = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  std::map<std::string, DataType> io;
  for (const auto& t : loaded->data.inputs) io[t.name] = t.dtype;
  for (const auto& t : loaded->data.outputs) io[t.name] = t.dtype;
  EXPECT_EQ(io["x"], DataType::kFloat64);
  EXPECT_EQ(io["u"], DataType::kUInt64);
  EXPECT_EQ(io["s"], DataType::kInt16);
  EXPECT_EQ(io["y"], DataType::kFloat64);
  EXPECT_EQ(io["h"], DataType::kFloat16);
  bool has_f64_weight = false;
  for (const auto& v : loaded->data.values)
    has_f64_weight |= v.kind == plan::ValueEntry::Kind::kWeight && v.dtype == DataType::kFloat64;
  EXPECT_TRUE(has_f64_weight);

  auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto engine = (*rt)->load_engine_bytes(std::move(bytes).value());
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
  std::vector<double> x = {0.3, 0.4, 1.0}, y = {0};
  std::vector<uint64_t> u = {9223372036854775808ull, 5}, uu(2);
  std::vector<int16_t> s = {-2, 2049};
  std::vector<uint16_t> h(2);
  ASSERT_TRUE((*ctx)->set_tensor_address("x", x.data(), 24).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("u", u.data(), 16).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("s", s.data(), 4).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("y", y.data(), 8).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("uu", uu.data(), 16).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("h", h.data(), 4).ok());
  Status st = (*ctx)->execute();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(y[0], 1.0 + 1e15);  // exact in double, not in float
  EXPECT_EQ(uu, (std::vector<uint64_t>{0, 10}));  // 2^63 + 2^63 wraps
  EXPECT_EQ(Half::to_float(h[0]), -2.f);
  EXPECT_EQ(Half::to_float(h[1]), 2048.f);  // 2049 rounds to even in float16
}

TEST(Dtypes, OpsetRangeAndPerOpMinimums) {
  EXPECT_EQ(onnx_import::kMinOpset, 1);
  EXPECT_EQ(onnx_import::kMaxOpset, 23);
  TempDir dir;
  auto import_with = [&](const onnx::ModelProto& m) {
    write_file(dir.file("m.onnx"), serialize(m));
    onnx_import::ImportOptions lax;
    lax.check_supported = false;
    return onnx_import::import_onnx_file(dir.file("m.onnx"), lax);
  };
  // Opset 23 imports.
  auto g = import_with(mixed_model(23));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  // Add-6 has the legacy 'broadcast' attribute: refused, naming the node and both opsets.
  g = import_with(mixed_model(6));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(g.status().message().find("Add (node 'add', opset 6 < 7)"), std::string::npos) << g.status().message();
  // Ops unchanged since opset 1 take it.
  for (const char* op : {"Softplus", "Softsign", "GlobalAveragePool", "Identity"}) {
    onnx::ModelProto m = make_model(1);
    auto* gr = m.mutable_graph();
    add_input(gr, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}});
    add_output(gr, "y", onnx::TensorProto_DataType_FLOAT, {});
    add_node(gr, op, "n", {"x"}, {"y"});
    auto r = import_with(m);
    EXPECT_TRUE(r.ok()) << op << ": " << r.status().to_string();
  }
  // BatchNormalization-6 (is_test / consumed_inputs) and Relu-5 (consumed_inputs) are refused.
  for (auto [op, opset] : {std::pair<const char*, int>{"BatchNormalization", 6}, {"Relu", 5}}) {
    onnx::ModelProto m = make_model(opset);
    auto* gr = m.mutable_graph();
    add_input(gr, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}});
    add_output(gr, "y", onnx::TensorProto_DataType_FLOAT, {});
    add_node(gr, op, "n", {"x"}, {"y"});
    auto r = import_with(m);
    ASSERT_FALSE(r.ok()) << op;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << op;
    EXPECT_NE(r.status().message().find("opset " + std::to_string(opset) + " <"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace streamrt
