// ONNX importer (src/onnx/importer.cc) and TensorProto conversion (src/onnx/tensor_proto.cc):
// models are built as onnx::ModelProto here, written to a temp folder and imported.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "onnx/importer.h"
#include "onnx/tensor_proto.h"
#include "onnx_model_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;
using onnx_import::import_onnx_bytes;
using onnx_import::import_onnx_file;
using onnx_import::tensor_from_proto;
constexpr int kF32 = onnx::TensorProto_DataType_FLOAT;

// Passes when `st` has `code` and its message contains every part.
::testing::AssertionResult is_error(const Status& st, StatusCode code, std::vector<std::string> parts = {}) {
  if (st.ok()) return ::testing::AssertionFailure() << "succeeded, expected " << status_code_name(code);
  if (st.code() != code)
    return ::testing::AssertionFailure() << "got " << st.to_string() << ", expected " << status_code_name(code);
  for (const auto& p : parts)
    if (st.message().find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << st.message() << "' lacks '" << p << "'";
  return ::testing::AssertionSuccess();
}
template <typename T>
::testing::AssertionResult is_error(const Result<T>& r, StatusCode code, std::vector<std::string> parts = {}) {
  if (r.ok()) return ::testing::AssertionFailure() << "succeeded, expected " << status_code_name(code);
  return is_error(r.status(), code, std::move(parts));
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  if (!v.empty()) std::memcpy(v.data(), t.data(), t.nbytes());
  return v;
}

class OnnxImport : public ::testing::Test {
 protected:
  Result<ir::Graph> import(const onnx::ModelProto& m, const onnx_import::ImportOptions& o = {}) {
    const std::string path = dir_.file("model.onnx");
    write_file(path, serialize(m));
    return import_onnx_file(path, o);
  }
  const Tensor* constant(const ir::Graph& g, const std::string& name) {
    ir::ValueId id = g.find_value(name);
    return id == ir::kNoValue ? nullptr : g.constant(id);
  }
  TempDir dir_;
};

TEST_F(OnnxImport, ImportsInputsOutputsNodesAndRawInitializer) {
  onnx::ModelProto m = add_relu_model();
  // Old-style models also list initializers as graph inputs; they must not become inputs.
  add_input(m.mutable_graph(), "W", kF32, {int64_t{1}, int64_t{3}});
  auto g = import(m);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->inputs.size(), 1u);
  const ir::Value& x = g->value(g->inputs[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, DataType::kFloat32);
  EXPECT_TRUE(x.has_shape);
  EXPECT_EQ(x.dims, (Dims{-1, 3}));  // dim_param "batch" -> dynamic
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->value(g->outputs[0]).name, "y");
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].op_type, "Add");
  EXPECT_EQ(g->nodes[0].name, "add");
  EXPECT_EQ(g->nodes[0].opset, 17);
  EXPECT_EQ(g->nodes[1].op_type, "Relu");
  const Tensor* w = constant(*g, "W");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype(), DataType::kFloat32);
  EXPECT_EQ(w->dims(), (Dims{1, 3}));
  EXPECT_EQ(values_of<float>(*w), (std::vector<float>{0.5f, -1.f, 2.f}));
}

TEST_F(OnnxImport, OrdersNodesTopologicallyAndNamesUnnamedNodes) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{4}});
  add_output(g, "y", kF32, {int64_t{4}});
  add_node(g, "Relu", "second", {"a"}, {"y"});
  add_node(g, "Neg", "", {"x"}, {"a"});
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->nodes.size(), 2u);
  EXPECT_EQ(r->nodes[0].op_type, "Neg");
  EXPECT_EQ(r->nodes[0].name, "Neg_0");
  EXPECT_EQ(r->nodes[1].name, "second");
}

TEST_F(OnnxImport, DimParamAndMissingDimBecomeDynamic) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_INT64, {std::string("batch"), std::monostate{}, int64_t{7}});
  add_output(g, "y", onnx::TensorProto_DataType_INT64, {});
  add_node(g, "Identity", "id", {"x"}, {"y"});
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ir::Value& x = r->value(r->inputs[0]);
  EXPECT_EQ(x.dtype, DataType::kInt64);
  EXPECT_EQ(x.dims, (Dims{-1, -1, 7}));
}

// Typed-field initializers: ONNX stores int8/uint8/bool/float16/bfloat16 in int32_data.
TEST_F(OnnxImport, TypedFieldInitializers) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  auto init = [&](const std::string& name, int type, std::vector<int64_t> dims) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    add_node(g, "Identity", "id_" + name, {name}, {name + "_out"});
    add_output(g, name + "_out", type, {});
    return t;
  };
  auto* f32 = init("f32", kF32, {2, 2});
  for (float f : {1.5f, -2.f, 0.f, 3.25f}) f32->add_float_data(f);
  auto* i64 = init("i64", onnx::TensorProto_DataType_INT64, {3});
  for (int64_t v : {int64_t{-1}, int64_t{1} << 40, int64_t{7}}) i64->add_int64_data(v);
  auto* i32 = init("i32", onnx::TensorProto_DataType_INT32, {2});
  for (int v : {-5, 1 << 30}) i32->add_int32_data(v);
  auto* i8 = init("i8", onnx::TensorProto_DataType_INT8, {3});
  for (int v : {-128, 127, -1}) i8->add_int32_data(v);
  auto* u8 = init("u8", onnx::TensorProto_DataType_UINT8, {3});
  for (int v : {0, 200, 255}) u8->add_int32_data(v);
  auto* b = init("b", onnx::TensorProto_DataType_BOOL, {4});
  for (int v : {0, 1, 1, 0}) b->add_int32_data(v);
  auto* f16 = init("f16", onnx::TensorProto_DataType_FLOAT16, {3});
  for (int v : {0x3C00, 0xC000, 0x7BFF}) f16->add_int32_data(v);  // 1.0, -2.0, 65504
  auto* bf16 = init("bf16", onnx::TensorProto_DataType_BFLOAT16, {2});
  for (int v : {0x3F80, 0xC040}) bf16->add_int32_data(v);  // 1.0, -3.0
  init("scalar", kF32, {})->add_float_data(42.f);

  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto get = [&](const std::string& n) {
    const Tensor* t = constant(*r, n);
    EXPECT_NE(t, nullptr) << n;
    return t ? *t : Tensor();
  };
  EXPECT_EQ(get("f32").dims(), (Dims{2, 2}));
  EXPECT_EQ(values_of<float>(get("f32")), (std::vector<float>{1.5f, -2.f, 0.f, 3.25f}));
  EXPECT_EQ(values_of<int64_t>(get("i64")), (std::vector<int64_t>{-1, int64_t{1} << 40, 7}));
  EXPECT_EQ(values_of<int32_t>(get("i32")), (std::vector<int32_t>{-5, 1 << 30}));
  EXPECT_EQ(get("i8").dtype(), DataType::kInt8);
  EXPECT_EQ(values_of<int8_t>(get("i8")), (std::vector<int8_t>{-128, 127, -1}));
  EXPECT_EQ(values_of<uint8_t>(get("u8")), (std::vector<uint8_t>{0, 200, 255}));
  EXPECT_EQ(get("b").dtype(), DataType::kBool);
  EXPECT_EQ(values_of<uint8_t>(get("b")), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(get("f16").dtype(), DataType::kFloat16);
  EXPECT_EQ(values_of<uint16_t>(get("f16")), (std::vector<uint16_t>{0x3C00, 0xC000, 0x7BFF}));
  EXPECT_EQ(get("bf16").dtype(), DataType::kBFloat16);
  EXPECT_EQ(values_of<uint16_t>(get("bf16")), (std::vector<uint16_t>{0x3F80, 0xC040}));
  EXPECT_EQ(get("scalar").dims(), Dims{});
  EXPECT_EQ(values_of<float>(get("scalar")), (std::vector<float>{42.f}));
}

TEST(OnnxTensorProto, BoolInt32DataIsNormalizedToZeroOrOne) {
  onnx::TensorProto t;
  t.set_name("b");
  t.set_data_type(onnx::TensorProto_DataType_BOOL);
  t.add_dims(3);
  for (int v : {0, 5, -1}) t.add_int32_data(v);
  auto r = tensor_from_proto(t, ".");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(*r), (std::vector<uint8_t>{0, 1, 1}));
}

TEST(OnnxTensorProto, RejectsBadInlineData) {
  onnx::TensorProto t = f32_raw("W", {2, 3}, {1, 2, 3, 4, 5});  // 20 bytes for 24
  EXPECT_TRUE(is_error(tensor_from_proto(t, "."), StatusCode::kInvalidModel, {"'W'", "20 bytes", "24"}));

  onnx::TensorProto few;  // typed field with fewer / more values than the shape
  few.set_name("few");
  few.set_data_type(kF32);
  few.add_dims(2);
  few.add_dims(3);
  for (int i = 0; i < 5; ++i) few.add_float_data(1.f);
  EXPECT_TRUE(is_error(tensor_from_proto(few, "."), StatusCode::kInvalidModel, {"'few'"}));
  few.add_float_data(1.f);
  few.add_float_data(1.f);
  EXPECT_TRUE(is_error(tensor_from_proto(few, "."), StatusCode::kInvalidModel, {"'few'", "7"}));

  onnx::TensorProto wrong_field;  // int64 values in a float tensor
  wrong_field.set_name("wf");
  wrong_field.set_data_type(kF32);
  wrong_field.add_dims(2);
  wrong_field.add_int64_data(1);
  wrong_field.add_int64_data(2);
  EXPECT_TRUE(is_error(tensor_from_proto(wrong_field, "."), StatusCode::kInvalidModel, {"'wf'"}));

  onnx::TensorProto neg = f32_raw("neg", {}, {});
  neg.add_dims(-2);
  EXPECT_TRUE(is_error(tensor_from_proto(neg, "."), StatusCode::kInvalidModel, {"'neg'", "negative"}));

  onnx::TensorProto huge = f32_raw("huge", {int64_t{1} << 31, int64_t{1} << 31, 16}, {1.f});
  EXPECT_FALSE(tensor_from_proto(huge, ".").ok());

  onnx::TensorProto dbl;
  dbl.set_name("dbl");
  dbl.set_data_type(onnx::TensorProto_DataType_COMPLEX64);
  dbl.add_float_data(1.0);
  dbl.add_float_data(2.0);
  EXPECT_TRUE(is_error(tensor_from_proto(dbl, "."), StatusCode::kUnsupported, {"'dbl'", "COMPLEX64"}));
  dbl.set_data_type(12345);
  EXPECT_TRUE(is_error(tensor_from_proto(dbl, "."), StatusCode::kUnsupported, {"'dbl'", "12345"}));
}

// ONNX INT4 / UINT4 (21, 22; opset 21): two values a byte, the first in the low nibble, in
// raw_data, int32_data or external data. They import as int8 (sign-extended) / uint8.
TEST(OnnxTensorProto, FourBitTensorsUnpackToOneByteEach) {
  const std::vector<uint8_t> packed = {0x21, 0xF8, 0x07};  // 1, 2, 8, 15, 7 (and the pad nibble)
  onnx::TensorProto u = raw_tensor<uint8_t>("u", 21, {5}, packed);
  auto r = tensor_from_proto(u, ".");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->dtype(), DataType::kUInt8);
  EXPECT_EQ(r->dims(), Dims{5});
  EXPECT_EQ(values_of<uint8_t>(*r), (std::vector<uint8_t>{1, 2, 8, 15, 7}));
  onnx::TensorProto i = raw_tensor<uint8_t>("i", 22, {5, 1}, packed);
  r = tensor_from_proto(i, ".");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->dtype(), DataType::kInt8);
  EXPECT_EQ(r->dims(), (Dims{5, 1}));
  EXPECT_EQ(values_of<int8_t>(*r), (std::vector<int8_t>{1, 2, -8, -1, 7}));
  onnx::TensorProto typed;  // int32_data: one packed byte per entry
  typed.set_name("t");
  typed.set_data_type(22);
  typed.add_dims(3);
  typed.add_int32_data(0x9F);
  typed.add_int32_data(0x03);
  r = tensor_from_proto(typed, ".");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*r), (std::vector<int8_t>{-1, -7, 3}));
  // Sizes count packed bytes: 5 values need 3.
  EXPECT_TRUE(is_error(tensor_from_proto(raw_tensor<uint8_t>("short", 21, {5}, {1, 2}), "."), StatusCode::kInvalidModel,
                       {"'short'", "2 bytes", "5 4-bit values need 3"}));
  EXPECT_TRUE(is_error(tensor_from_proto(raw_tensor<uint8_t>("long", 21, {2}, {1, 2}), "."), StatusCode::kInvalidModel,
                       {"'long'", "need 1"}));
  typed.add_int32_data(0);
  EXPECT_TRUE(is_error(tensor_from_proto(typed, "."), StatusCode::kInvalidModel, {"'t'", "3 values", "2"}));
}

TEST_F(OnnxImport, ConstantNodes) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{3}});
  add_output(g, "y", kF32, {int64_t{3}});
  add_output(g, "shape", onnx::TensorProto_DataType_INT64, {int64_t{2}});
  auto* k = add_node(g, "Constant", "k", {}, {"kv"});
  auto* a = k->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = f32_raw("", {3}, {2.f, 4.f, 8.f});
  add_node(g, "Mul", "mul", {"x", "kv"}, {"y"});
  auto* s = add_node(g, "Constant", "s", {}, {"shape"});
  auto* ints = s->add_attribute();
  ints->set_name("value_ints");
  ints->set_type(onnx::AttributeProto::INTS);
  ints->add_ints(5);
  ints->add_ints(-1);

  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto find = [&](const std::string& name) -> const ir::Node* {
    for (const auto& n : r->nodes)
      if (n.name == name) return &n;
    return nullptr;
  };
  const ir::Node* kn = find("k");
  const ir::Node* sn = find("s");
  ASSERT_NE(kn, nullptr);
  ASSERT_NE(sn, nullptr);
  auto value = kn->attr_tensor("value");
  ASSERT_TRUE(value.ok()) << value.status().to_string();
  EXPECT_EQ(value->dims(), Dims{3});
  EXPECT_EQ(values_of<float>(*value), (std::vector<float>{2.f, 4.f, 8.f}));
  auto v = sn->attr_ints("value_ints");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int64_t>{5, -1}));

  // A bad tensor inside an attribute names the node and the attribute.
  a->mutable_t()->set_raw_data("xyz");
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"node 'k'", "'value'"}));
  a->set_type(onnx::AttributeProto::SPARSE_TENSOR);  // GRAPH attributes import since If / Loop / Scan
  EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"node 'k'", "'value'", "SPARSE_TENSOR"}));
}

TEST_F(OnnxImport, OpsetOutOfRangeIsUnsupportedNamingTheOpset) {
  for (int64_t v : {int64_t{0}, int64_t{24}, int64_t{1000}}) {
    onnx::ModelProto m = add_relu_model();
    m.mutable_opset_import(0)->set_version(v);
    EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"opset " + std::to_string(v), "1..23"}));
  }
  // A version that only looks in range after truncation to 32 bits.
  onnx::ModelProto m = add_relu_model();
  m.mutable_opset_import(0)->set_version((int64_t{1} << 32) + 17);
  EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"opset 4294967313"}));
  // No opset_import at all means opset 1 (IR version 3): in range, but Add-1 (legacy
  // 'broadcast' attribute) and Relu-1 (consumed_inputs) are older than streamrt implements.
  m.clear_opset_import();
  EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"opset 1 < 7", "opset 1 < 6"}));
  // "ai.onnx" is the default domain's other spelling.
  m = add_relu_model();
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  m.mutable_opset_import(0)->set_version(13);
  auto r = import(m);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->nodes[0].opset, 13);
}

TEST_F(OnnxImport, ListsEveryUnsupportedOpInOneError) {
  onnx::ModelProto m = make_model();
  auto* custom = m.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  auto* g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{4}});
  add_output(g, "y", kF32, {int64_t{4}});
  add_node(g, "FooOp", "foo1", {"x"}, {"a"});
  add_node(g, "Relu", "fine", {"a"}, {"b"});
  add_node(g, "BarOp", "bar", {"b"}, {"c"});
  add_node(g, "Baz", "", {"c"}, {"d"})->set_domain("com.example");
  add_node(g, "Gelu", "gelu", {"d"}, {"y"});  // exists only from opset 20; the model has 17
  auto r = import(m);
  ASSERT_TRUE(is_error(r, StatusCode::kUnsupported,
                       {"FooOp (node 'foo1')", "BarOp (node 'bar')", "com.example.Baz (node 'Baz_0')",
                        "Gelu (node 'gelu', opset 17 < 20)"}));
  EXPECT_EQ(r.status().message().find("fine"), std::string::npos) << r.status().message();

  // Without check_supported unknown ops are left for later, but an op older than its
  // min_opset is still refused: it would otherwise run with the newer semantics.
  onnx_import::ImportOptions lax;
  lax.check_supported = false;
  auto g2 = import(m, lax);
  ASSERT_TRUE(is_error(g2, StatusCode::kUnsupported, {"Gelu (node 'gelu', opset 17 < 20)"}));
  EXPECT_EQ(g2.status().message().find("FooOp"), std::string::npos) << g2.status().message();
  g->mutable_node(4)->set_op_type("Relu");
  g2 = import(m, lax);
  ASSERT_TRUE(g2.ok()) << g2.status().to_string();
  EXPECT_EQ(g2->nodes.size(), 5u);
}

TEST_F(OnnxImport, CycleAndUndefinedInputNameTheNode) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{4}});
  add_output(g, "y", kF32, {int64_t{4}});
  add_node(g, "Add", "loop_a", {"x", "q"}, {"p"});
  add_node(g, "Relu", "loop_b", {"p"}, {"q"});
  add_node(g, "Relu", "out", {"p"}, {"y"});
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"cycle", "node 'loop_"}));

  m = make_model();
  g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{4}});
  add_output(g, "y", kF32, {int64_t{4}});
  add_node(g, "Add", "adder", {"x", "nowhere"}, {"y"});
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"node 'adder'", "'nowhere'"}));

  add_node(g, "Relu", "twice", {"x"}, {"y"});  // y produced twice
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'y'"}));
}

TEST_F(OnnxImport, RejectsMalformedGraphs) {
  onnx::ModelProto m = add_relu_model();
  *m.mutable_graph()->add_initializer() = f32_raw("W", {1, 3}, {1, 2, 3});
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'W'", "twice"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(11, 'x'));
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'W'", "11 bytes", "12"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->set_name("");
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"input", "no name"}));

  m = add_relu_model();
  m.mutable_graph()->add_input()->CopyFrom(m.graph().input(0));
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'x'", "twice"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-3);
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'x'", "negative"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"'x'", "no shape"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(0);
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"'x'", "no element type"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto_DataType_STRING);
  EXPECT_TRUE(is_error(import(m), StatusCode::kUnsupported, {"'x'", "STRING"}));

  m = add_relu_model();
  m.mutable_graph()->clear_output();
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"no outputs"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_node(0)->set_domain("com.unknown");
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"node 'add'", "com.unknown"}));

  m = add_relu_model();
  m.mutable_graph()->mutable_node(0)->clear_output();
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"node 'add'", "no outputs"}));

  m = add_relu_model();
  m.clear_graph();
  EXPECT_TRUE(is_error(import(m), StatusCode::kInvalidModel, {"no graph"}));
}

TEST_F(OnnxImport, TruncatedAndGarbageBytesAreRejected) {
  const std::string bytes = serialize(add_relu_model());
  const std::string base = dir_.path().string();
  ASSERT_TRUE(import_onnx_bytes(bytes.data(), bytes.size(), base).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = import_onnx_bytes(bytes.data(), len, base);
    ASSERT_FALSE(r.ok()) << "prefix of " << len << " bytes imported";
    // A prefix that ends between fields parses (e.g. without opset_import -> opset 1).
    EXPECT_TRUE(r.status().code() == StatusCode::kInvalidModel || r.status().code() == StatusCode::kUnsupported)
        << len << ": " << r.status().to_string();
  }
  EXPECT_TRUE(is_error(import_onnx_bytes(bytes.data(), bytes.size() / 2, base), StatusCode::kInvalidModel,
                       {"protobuf"}));
  std::string garbage(300, '\xff');
  EXPECT_TRUE(is_error(import_onnx_bytes(garbage.data(), garbage.size(), base), StatusCode::kInvalidModel));

  // Random mutations never crash and every rejection says why.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 1 + i % 4; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    auto r = import_onnx_bytes(b.data(), b.size(), base);
    if (!r.ok()) {
      EXPECT_FALSE(r.status().message().empty());
    }
  }

  write_file(dir_.file("garbage.onnx"), garbage);
  EXPECT_TRUE(is_error(import_onnx_file(dir_.file("garbage.onnx")), StatusCode::kInvalidModel, {"garbage.onnx"}));
  EXPECT_TRUE(is_error(import_onnx_file(dir_.file("missing.onnx")), StatusCode::kIoError, {"missing.onnx"}));
  EXPECT_TRUE(is_error(import_onnx_file(dir_.path().string()), StatusCode::kIoError));
}

// External data: <tmp>/model/weights.bin holds the floats 0..15; <tmp>/outside.bin lies
// next to the model's folder, where no model may reach.
class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(model_dir_ / "data");
    std::vector<float> v(16);
    for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
    write_file(model_dir_ / "weights.bin", bytes_of(v));
    write_file(model_dir_ / "data" / "w.bin", bytes_of(std::vector<float>{7.f, 8.f}));
    write_file(tmp_.path() / "outside.bin", bytes_of(v));
  }
  Result<Tensor> load(const std::vector<int64_t>& dims, const std::string& location, const std::string& offset = "",
                      const std::string& length = "") {
    return tensor_from_proto(external_tensor("ext", kF32, dims, location, offset, length), model_dir_.string());
  }
  TempDir tmp_;
  fs::path model_dir_ = tmp_.path() / "model";
};

TEST_F(OnnxExternalData, LoadsFromLocationOffsetLength) {
  auto t = load({2, 3}, "weights.bin", "16", "24");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dims(), (Dims{2, 3}));
  EXPECT_EQ(values_of<float>(*t), (std::vector<float>{4, 5, 6, 7, 8, 9}));
  t = load({16}, "weights.bin");  // no offset, no length: from the start
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(values_of<float>(*t)[15], 15.f);
  t = load({2}, "data/w.bin", "0", "8");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(values_of<float>(*t), (std::vector<float>{7.f, 8.f}));
  t = load({0}, "weights.bin", "64");  // empty tensor at the very end
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->numel(), 0);
  // A symlink that stays inside the folder is fine.
  fs::create_symlink("weights.bin", model_dir_ / "alias.bin");
  t = load({1}, "alias.bin", "4");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(values_of<float>(*t), (std::vector<float>{1.f}));
}

TEST_F(OnnxExternalData, ModelFileResolvesDataNextToIt) {
  onnx::ModelProto m = add_relu_model();
  *m.mutable_graph()->mutable_initializer(0) = external_tensor("W", kF32, {1, 3}, "weights.bin", "4", "12");
  write_file(model_dir_ / "model.onnx", serialize(m));
  auto g = import_onnx_file((model_dir_ / "model.onnx").string());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const Tensor* w = g->constant(g->find_value("W"));
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(values_of<float>(*w), (std::vector<float>{1.f, 2.f, 3.f}));
  // Also when the model's folder is reached through a symlink.
  fs::create_directory_symlink(model_dir_, tmp_.path() / "link_to_model");
  g = import_onnx_file((tmp_.path() / "link_to_model" / "model.onnx").string());
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  // A bad external initializer fails the import with the file named.
  *m.mutable_graph()->mutable_initializer(0) = external_tensor("W", kF32, {1, 3}, "../outside.bin");
  write_file(model_dir_ / "model.onnx", serialize(m));
  EXPECT_TRUE(is_error(import_onnx_file((model_dir_ / "model.onnx").string()), StatusCode::kInvalidModel,
                       {"model.onnx", "'W'", ".."}));
}

TEST_F(OnnxExternalData, RejectsPathsOutsideTheModelFolder) {
  const std::string abs = (model_dir_ / "weights.bin").string();
  EXPECT_TRUE(is_error(load({4}, abs), StatusCode::kInvalidModel, {"'ext'", "absolute"}));
  EXPECT_TRUE(is_error(load({4}, "../outside.bin"), StatusCode::kInvalidModel, {"'ext'", ".."}));
  EXPECT_TRUE(is_error(load({4}, "data/../weights.bin"), StatusCode::kInvalidModel, {".."}));
  EXPECT_TRUE(is_error(load({4}, "data/.."), StatusCode::kInvalidModel, {".."}));
  fs::create_symlink(tmp_.path() / "outside.bin", model_dir_ / "escape.bin");
  EXPECT_TRUE(is_error(load({4}, "escape.bin"), StatusCode::kInvalidModel, {"'ext'", "escape.bin", "outside"}));
  fs::create_symlink("../../outside.bin", model_dir_ / "data" / "relative_escape.bin");
  EXPECT_TRUE(is_error(load({4}, "data/relative_escape.bin"), StatusCode::kInvalidModel, {"outside"}));
  fs::create_directory_symlink(tmp_.path(), model_dir_ / "up");
  EXPECT_TRUE(is_error(load({4}, "up/outside.bin"), StatusCode::kInvalidModel, {"outside"}));
  // A sibling folder whose name extends the model folder's name is still outside.
  fs::create_directories(tmp_.path() / "model2");
  write_file(tmp_.path() / "model2" / "w.bin", std::string(16, '\0'));
  fs::create_symlink(tmp_.path() / "model2" / "w.bin", model_dir_ / "sibling.bin");
  EXPECT_TRUE(is_error(load({4}, "sibling.bin"), StatusCode::kInvalidModel, {"outside"}));
}

TEST_F(OnnxExternalData, RejectsBadRangesAndFiles) {
  EXPECT_TRUE(is_error(load({8}, "weights.bin", "40", "32"), StatusCode::kInvalidModel,
                       {"'ext'", "offset 40", "past the end", "64 bytes"}));
  EXPECT_TRUE(is_error(load({1}, "weights.bin", "1000"), StatusCode::kInvalidModel, {"past the end"}));
  EXPECT_TRUE(is_error(load({17}, "weights.bin"), StatusCode::kInvalidModel, {"past the end"}));
  EXPECT_TRUE(is_error(load({2, 3}, "weights.bin", "0", "20"), StatusCode::kInvalidModel, {"length 20", "24"}));
  EXPECT_TRUE(is_error(load({4}, "nope.bin"), StatusCode::kIoError, {"'ext'", "nope.bin"}));
  EXPECT_TRUE(is_error(load({4}, ""), StatusCode::kInvalidModel, {"no location"}));
  for (const char* bad : {"abc", "-4", "12x", "99999999999999999999999"})
    EXPECT_TRUE(is_error(load({1}, "weights.bin", bad), StatusCode::kInvalidModel, {"offset", bad}));
  EXPECT_TRUE(is_error(load({1}, "weights.bin", "0", "-4"), StatusCode::kInvalidModel, {"length"}));
  EXPECT_TRUE(is_error(load({1}, "weights.bin", "9223372036854775807"), StatusCode::kInvalidModel, {"past the end"}));
  // A shape far larger than the file fails before anything that size is allocated.
  EXPECT_TRUE(is_error(load({int64_t{1} << 34}, "weights.bin"), StatusCode::kInvalidModel, {"past the end"}));
  EXPECT_FALSE(load({1}, "data").ok());  // a folder, not a file
  EXPECT_FALSE(load({1}, ".").ok());
  // 4-bit tensors read half a byte a value: 64 bytes hold 128 (INT4 = 22).
  auto int4 = tensor_from_proto(external_tensor("q", 22, {2, 64}, "weights.bin"), model_dir_.string());
  ASSERT_TRUE(int4.ok()) << int4.status().to_string();
  EXPECT_EQ(int4->dtype(), DataType::kInt8);
  // Bytes 4..7 are float 1.0 (00 00 80 3F): values 12..15 are 0, -8, -1 (0xF), 3.
  const std::vector<int8_t> v = values_of<int8_t>(*int4);
  EXPECT_EQ(std::vector<int8_t>(v.begin() + 12, v.begin() + 16), (std::vector<int8_t>{0, -8, -1, 3}));
  EXPECT_TRUE(is_error(tensor_from_proto(external_tensor("q", 22, {129}, "weights.bin"), model_dir_.string()),
                       StatusCode::kInvalidModel, {"65", "past the end"}));
  // Tensors of other types honour their element size.
  auto i64 = tensor_from_proto(external_tensor("i", onnx::TensorProto_DataType_INT64, {9}, "weights.bin"),
                               model_dir_.string());
  EXPECT_TRUE(is_error(i64, StatusCode::kInvalidModel, {"72", "past the end"}));
}

TEST(OnnxTensorPb, SaveLoadRoundTripForEveryDtype) {
  TempDir dir;
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt64,
                             DataType::kInt32,   DataType::kInt8,    DataType::kUInt8,    DataType::kBool};
  for (DataType dt : dtypes) {
    for (const Dims& dims : {Dims{2, 3}, Dims{}, Dims{0, 4}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + dims_to_string(dims));
      auto t = Tensor::allocate(dt, dims);
      ASSERT_TRUE(t.ok());
      auto* p = static_cast<uint8_t*>(t->mutable_data());
      for (size_t i = 0; i < t->nbytes(); ++i) p[i] = dt == DataType::kBool ? i % 2 : static_cast<uint8_t>(i * 37 + 1);
      const std::string path = dir.file("t.pb");
      ASSERT_TRUE(onnx_import::save_tensor_pb(*t, "my tensor", path).ok());

      // Independently: the file is a TensorProto with raw_data.
      std::ifstream in(path, std::ios::binary);
      onnx::TensorProto proto;
      ASSERT_TRUE(proto.ParseFromIstream(&in));
      EXPECT_EQ(proto.data_type(), onnx_import::dtype_to_onnx(dt));
      EXPECT_EQ(Dims(proto.dims().begin(), proto.dims().end()), dims);
      EXPECT_EQ(proto.raw_data(), std::string(reinterpret_cast<const char*>(p), t->nbytes()));

      std::string name;
      auto back = onnx_import::load_tensor_pb(path, &name);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(name, "my tensor");
      EXPECT_EQ(back->dtype(), dt);
      EXPECT_EQ(back->dims(), dims);
      ASSERT_EQ(back->nbytes(), t->nbytes());
      if (t->nbytes()) {
        EXPECT_EQ(std::memcmp(back->data(), t->data(), t->nbytes()), 0);
      }
    }
  }
  for (DataType dt : dtypes) {
    auto back = onnx_import::dtype_from_onnx(onnx_import::dtype_to_onnx(dt), "x");
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, dt);
  }
}

TEST(OnnxTensorPb, LoadErrors) {
  TempDir dir;
  EXPECT_TRUE(is_error(onnx_import::load_tensor_pb(dir.file("none.pb")), StatusCode::kIoError, {"none.pb"}));
  write_file(dir.file("garbage.pb"), std::string(64, '\xff'));
  auto r = onnx_import::load_tensor_pb(dir.file("garbage.pb"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("garbage.pb"), std::string::npos) << r.status().message();
  onnx::TensorProto bad = f32_raw("short", {4}, {1.f});
  write_file(dir.file("short.pb"), bad.SerializeAsString());
  EXPECT_TRUE(is_error(onnx_import::load_tensor_pb(dir.file("short.pb")), StatusCode::kInvalidModel, {"'short'"}));
  // Typed fields (as some backend-test files store them) load too.
  onnx::TensorProto typed;
  typed.set_name("typed");
  typed.set_data_type(onnx::TensorProto_DataType_INT64);
  typed.add_dims(2);
  typed.add_int64_data(-3);
  typed.add_int64_data(9);
  write_file(dir.file("typed.pb"), typed.SerializeAsString());
  auto t = onnx_import::load_tensor_pb(dir.file("typed.pb"));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*t), (std::vector<int64_t>{-3, 9}));
}

}  // namespace
}  // namespace streamrt
