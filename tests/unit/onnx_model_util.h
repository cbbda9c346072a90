// Helpers to build small ONNX models (onnx::ModelProto) in C++ for importer tests and for
// the onnx fuzz seed corpus.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "onnx/onnx_pb.h"

namespace streamrt::testing {

namespace fs = std::filesystem;

// A dimension: a number (dim_value), a name (dim_param), or std::monostate (neither).
using OnnxDim = std::variant<int64_t, std::string, std::monostate>;

inline onnx::ModelProto make_model(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("streamrt-tests");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

inline void set_tensor_type(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
                            const std::vector<OnnxDim>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const OnnxDim& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* v = std::get_if<int64_t>(&d)) dim->set_dim_value(*v);
    else if (const auto* p = std::get_if<std::string>(&d)) dim->set_dim_param(*p);
  }
}

inline void add_input(onnx::GraphProto* g, const std::string& name, int elem_type,
                      const std::vector<OnnxDim>& dims) {
  set_tensor_type(g->add_input(), name, elem_type, dims);
}

inline void add_output(onnx::GraphProto* g, const std::string& name, int elem_type,
                       const std::vector<OnnxDim>& dims) {
  set_tensor_type(g->add_output(), name, elem_type, dims);
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

// A tensor with raw_data.
template <typename T>
onnx::TensorProto raw_tensor(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                             const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(values.data(), values.size() * sizeof(T));
  return t;
}
inline onnx::TensorProto f32_raw(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
  return raw_tensor(name, onnx::TensorProto_DataType_FLOAT, dims, values);
}
// Float16 values as bit patterns.
inline onnx::TensorProto f16_raw(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<uint16_t>& bits) {
  return raw_tensor(name, onnx::TensorProto_DataType_FLOAT16, dims, bits);
}


// A tensor whose data lives in an external file.
inline onnx::TensorProto external_tensor(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                                         const std::string& location, const std::string& offset = "",
                                         const std::string& length = "") {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (!offset.empty()) kv("offset", offset);
  if (!length.empty()) kv("length", length);
  return t;
}

// y = Relu(x + W): x f32[batch, 3] with a dim_param, W an f32[1, 3] initializer.
inline onnx::ModelProto add_relu_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{3}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {std::string("batch"), int64_t{3}});
  *g->add_initializer() = f32_raw("W", {1, 3}, {0.5f, -1.f, 2.f});
  add_node(g, "Add", "add", {"x", "W"}, {"s"});
  add_node(g, "Relu", "relu", {"s"}, {"y"});
  return m;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A fresh directory, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "streamrt_import_XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

}  // namespace streamrt::testing
