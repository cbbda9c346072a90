// Seed corpora of the ONNX and .npy fuzz targets (fuzz/corpus/onnx/, fuzz/corpus/npy/):
// generated here, checked here. valid_* must load; corrupt_* must be rejected as malformed,
// unsupported_* as unsupported; anything else (regress_*) must just not crash. To regenerate
// the committed seeds:
//   STREAMRT_WRITE_IMPORT_CORPUS=fuzz/corpus build/bin/streamrt_tests --gtest_filter='ImportCorpus*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "../../fuzz/onnx_fuzz_base.h"
#include "core/npy.h"
#include "onnx/importer.h"
#include "onnx_model_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;
using Seeds = std::vector<std::pair<std::string, std::string>>;
constexpr int kF32 = onnx::TensorProto_DataType_FLOAT;

onnx::ModelProto with_external_w(const std::string& location, const std::string& offset, const std::string& length,
                                 std::vector<int64_t> dims = {1, 3}) {
  onnx::ModelProto m = add_relu_model();
  *m.mutable_graph()->mutable_initializer(0) = external_tensor("W", kF32, dims, location, offset, length);
  return m;
}

Seeds onnx_seeds() {
  Seeds seeds;
  auto add = [&](const char* name, const onnx::ModelProto& m) { seeds.emplace_back(name, serialize(m)); };
  const onnx::ModelProto base = add_relu_model();
  add("valid_add_relu.onnx", base);

  onnx::ModelProto m = make_model(7);  // old style: initializer also listed as an input
  auto* g = m.mutable_graph();
  add_input(g, "x", kF32, {int64_t{2}, int64_t{2}});
  add_input(g, "B", kF32, {int64_t{2}});
  add_output(g, "y", kF32, {int64_t{2}, int64_t{2}});
  *g->add_initializer() = f32_raw("B", {2}, {1.f, -1.f});
  add_node(g, "Add", "add", {"x", "B"}, {"y"});
  add("valid_opset7_initializer_input.onnx", m);

  m = make_model(13);
  g = m.mutable_graph();
  add_input(g, "x", kF32, {std::string("n"), int64_t{3}});
  add_output(g, "y", kF32, {std::string("n"), int64_t{3}});
  auto* c = add_node(g, "Constant", "k", {}, {"k_out"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = f32_raw("", {3}, {1.f, 2.f, 3.f});
  auto* gemm = add_node(g, "Gemm", "gemm", {"x", "w", "k_out"}, {"y"});
  for (const char* key : {"alpha", "beta"}) {
    auto* at = gemm->add_attribute();
    at->set_name(key);
    at->set_type(onnx::AttributeProto::FLOAT);
    at->set_f(0.5f);
  }
  auto* tb = gemm->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(kF32);
  w->add_dims(3);
  w->add_dims(3);
  for (int i = 0; i < 9; ++i) w->add_float_data(static_cast<float>(i));
  add("valid_constant_gemm.onnx", m);

  m = make_model();
  g = m.mutable_graph();
  const std::pair<const char*, int> typed[] = {{"i64", onnx::TensorProto_DataType_INT64},
                                               {"i32", onnx::TensorProto_DataType_INT32},
                                               {"i8", onnx::TensorProto_DataType_INT8},
                                               {"u8", onnx::TensorProto_DataType_UINT8},
                                               {"b", onnx::TensorProto_DataType_BOOL},
                                               {"f16", onnx::TensorProto_DataType_FLOAT16},
                                               {"bf16", onnx::TensorProto_DataType_BFLOAT16}};
  for (const auto& [name, type] : typed) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(2);
    if (type == onnx::TensorProto_DataType_INT64) {
      t->add_int64_data(-7);
      t->add_int64_data(9);
    } else {
      t->add_int32_data(1);
      t->add_int32_data(0x3C00);
    }
    add_node(g, "Identity", std::string("id_") + name, {name}, {std::string(name) + "_out"});
    add_output(g, std::string(name) + "_out", type, {int64_t{2}});
  }
  add("valid_typed_initializers.onnx", m);

  add("valid_external.onnx", with_external_w("weights.bin", "4", "12"));
  add("valid_external_subdir.onnx", with_external_w("data/w.bin", "", "", {1, 3}));
  add("valid_external_inside_symlink.onnx", with_external_w("inside.bin", "100", ""));

  const std::string bytes = serialize(base);
  seeds.emplace_back("corrupt_truncated.onnx", bytes.substr(0, bytes.size() * 2 / 3));
  std::string garbage(160, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 73 + 11);
  seeds.emplace_back("corrupt_garbage.onnx", garbage);

  m = base;
  *m.mutable_graph()->mutable_node(0)->mutable_input(1) = "nowhere";
  add("corrupt_undefined_input.onnx", m);
  m = base;
  *m.mutable_graph()->mutable_node(0)->mutable_input(0) = "y";  // add reads relu's output
  add("corrupt_cycle.onnx", m);
  m = base;
  *m.mutable_graph()->add_initializer() = f32_raw("W", {1, 3}, {1, 2, 3});
  add("corrupt_duplicate_initializer.onnx", m);
  m = base;
  m.mutable_graph()->mutable_initializer(0)->set_raw_data("12345");
  add("corrupt_raw_data_size.onnx", m);
  m = base;
  m.mutable_graph()->mutable_input(0)->set_name("");
  add("corrupt_unnamed_input.onnx", m);
  m = base;
  m.mutable_graph()->add_input()->CopyFrom(m.graph().input(0));
  add("corrupt_duplicate_input.onnx", m);
  m = base;
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-1);
  add("corrupt_negative_dim.onnx", m);
  m = base;
  m.mutable_graph()->mutable_node(1)->clear_output();  // crashed shape inference (found by fuzzing)
  add("corrupt_node_without_outputs.onnx", m);
  add("corrupt_external_absolute.onnx", with_external_w("/etc/passwd", "", ""));
  add("corrupt_external_dotdot.onnx", with_external_w("../outside.bin", "", ""));
  add("corrupt_external_symlink_escape.onnx", with_external_w("escape.bin", "", ""));
  add("corrupt_external_past_end.onnx", with_external_w("weights.bin", "250", "12"));
  add("corrupt_external_length.onnx", with_external_w("weights.bin", "0", "16"));
  add("corrupt_external_huge.onnx", with_external_w("weights.bin", "", "", {int64_t{1} << 20, int64_t{1} << 20}));
  add("corrupt_external_missing.onnx", with_external_w("missing.bin", "", ""));

  m = base;
  m.mutable_opset_import(0)->set_version(99);
  add("unsupported_opset99.onnx", m);
  m = base;
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  m.mutable_graph()->mutable_node(1)->set_op_type("AlsoMissing");
  add("unsupported_ops.onnx", m);
  return seeds;
}

std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY") + static_cast<char>(major) + '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string npy_dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

Seeds npy_seeds() {
  Seeds s;
  const std::string f32x6 = bytes_of(std::vector<float>{1, -2, 3.5f, 0, 1e-3f, 7});
  s.emplace_back("valid_f32_2x3.npy", npy_file(npy_dict("<f4", "(2, 3)"), f32x6));
  s.emplace_back("valid_i64_scalar.npy", npy_file(npy_dict("<i8", "()"), bytes_of(std::vector<int64_t>{-42})));
  s.emplace_back("valid_bool_5.npy", npy_file(npy_dict("|b1", "(5,)"), std::string("\1\0\1\1\0", 5)));
  s.emplace_back("valid_f16_empty.npy", npy_file(npy_dict("<f2", "(0, 3)"), ""));
  s.emplace_back("valid_u8_v2.npy", npy_file(npy_dict("|u1", "(4,)"), "abcd", 2));
  s.emplace_back("valid_i8_v3.npy", npy_file(npy_dict("|i1", "(2, 1)"), "\x80\x7f", 3));
  s.emplace_back("valid_i32_compact.npy", npy_file("{'descr':'<i4','fortran_order':False,'shape':(1,)}",
                                                     std::string("\1\0\0\0", 4)));
  s.emplace_back("valid_bf16.npy", npy_file(npy_dict("<u2", "(2,)"), "\x80\x3f\x40\xc0"));

  const std::string good = npy_file(npy_dict("<f4", "(2, 3)"), f32x6);
  std::string b = good;
  b[0] = 'X';
  s.emplace_back("corrupt_bad_magic.npy", b);
  s.emplace_back("corrupt_truncated_header.npy", good.substr(0, 40));
  s.emplace_back("corrupt_truncated_data.npy", good.substr(0, good.size() - 3));
  b = good + "xx";
  s.emplace_back("corrupt_trailing_bytes.npy", b);
  b = good;
  b[8] = '\xff';
  s.emplace_back("corrupt_header_length.npy", b);
  b = good;
  b[6] = 9;
  s.emplace_back("corrupt_version9.npy", b);
  s.emplace_back("corrupt_no_shape.npy", npy_file("{'descr': '<f4', 'fortran_order': False}", f32x6));
  s.emplace_back("corrupt_no_descr.npy", npy_file("{'fortran_order': False, 'shape': (6,)}", f32x6));
  s.emplace_back("corrupt_negative_dim.npy", npy_file(npy_dict("<f4", "(-6,)"), f32x6));
  s.emplace_back("corrupt_huge_shape.npy", npy_file(npy_dict("<f4", "(4294967296, 4294967296)"), f32x6));
  s.emplace_back("corrupt_unterminated.npy", npy_file("{'descr': '<f4, 'shape': (6,)", f32x6));
  s.emplace_back("unsupported_fortran.npy", npy_file(npy_dict("<f4", "(2, 3)", "True"), f32x6));
  s.emplace_back("valid_f8.npy", npy_file(npy_dict("<f8", "(3,)"), f32x6));
  s.emplace_back("unsupported_c8.npy", npy_file(npy_dict("<c8", "(3,)"), f32x6));
  s.emplace_back("unsupported_big_endian.npy", npy_file(npy_dict(">f4", "(2, 3)"), f32x6));
  // std::regex once parsed headers and overflowed the stack on a long descr.
  s.emplace_back("regress_long_descr.npy",
                 npy_file("{'descr': '" + std::string(40000, 'f') + "', 'shape': (1,)}", "\1\2\3\4", 2));
  return s;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

void expect_named_outcome(const std::string& name, const Status& st, std::initializer_list<StatusCode> malformed) {
  SCOPED_TRACE(name);
  if (starts_with(name, "valid_")) {
    EXPECT_TRUE(st.ok()) << st.to_string();
  } else if (starts_with(name, "corrupt_")) {
    ASSERT_FALSE(st.ok());
    EXPECT_NE(std::find(malformed.begin(), malformed.end(), st.code()), malformed.end()) << st.to_string();
    EXPECT_FALSE(st.message().empty());
  } else if (starts_with(name, "unsupported_")) {
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  }
}

class ImportCorpus : public ::testing::Test {
 protected:
  void SetUp() override { base_ = fuzzing::make_onnx_fuzz_base_dir(); }
  void TearDown() override {
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(fs::path(base_).parent_path(), ec);
  }
  void check_onnx(const std::string& name, const std::string& bytes) {
    auto g = onnx_import::import_onnx_bytes(bytes.data(), bytes.size(), base_);
    expect_named_outcome(name, g.ok() ? ok_status() : g.status(), {StatusCode::kInvalidModel, StatusCode::kIoError});
  }
  void check_npy(const std::string& name, const std::string& bytes) {
    auto t = parse_npy(bytes, name);
    expect_named_outcome(name, t.ok() ? ok_status() : t.status(), {StatusCode::kInvalidArgument});
  }
  // Checks every file of fuzz/corpus/<sub> with `check`.
  template <typename Fn>
  void check_committed(const char* sub, Fn check) {
    fs::path dir = fs::path(STREAMRT_SOURCE_DIR) / "fuzz" / "corpus" / sub;
    if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " not found";
    size_t count = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::ifstream in(e.path(), std::ios::binary);
      check(e.path().filename().string(), std::string((std::istreambuf_iterator<char>(in)), {}));
      ++count;
    }
    EXPECT_GT(count, 0u);
  }
  std::string base_;
};

void maybe_write(const char* sub, const Seeds& seeds) {
  const char* out = std::getenv("STREAMRT_WRITE_IMPORT_CORPUS");
  if (!out || !*out) return;
  fs::create_directories(fs::path(out) / sub);
  for (const auto& [name, bytes] : seeds) write_file(fs::path(out) / sub / name, bytes);
}

TEST_F(ImportCorpus, OnnxSeedsBehaveAsNamed) {
  ASSERT_FALSE(base_.empty());
  Seeds seeds = onnx_seeds();
  for (const auto& [name, bytes] : seeds) check_onnx(name, bytes);
  maybe_write("onnx", seeds);
}

TEST_F(ImportCorpus, NpySeedsBehaveAsNamed) {
  Seeds seeds = npy_seeds();
  for (const auto& [name, bytes] : seeds) check_npy(name, bytes);
  maybe_write("npy", seeds);
}

TEST_F(ImportCorpus, CommittedOnnxCorpusBehavesAsNamed) {
  check_committed("onnx", [&](const std::string& n, const std::string& b) { check_onnx(n, b); });
}

TEST_F(ImportCorpus, CommittedNpyCorpusBehavesAsNamed) {
  check_committed("npy", [&](const std::string& n, const std::string& b) { check_npy(n, b); });
}

}  // namespace
}  // namespace streamrt
