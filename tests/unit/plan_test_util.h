// Helpers for plan format tests: a small plan that uses every field, a field-by-field
// comparison, and raw byte surgery on serialized plans (with checksums recomputed).
#pragma once

#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cmath>
#include <cstring>

#include "plan/plan.h"

namespace streamrt::testing {

inline Tensor plan_weight(DataType dtype, const Dims& dims, uint8_t seed) {
  Tensor t = Tensor::allocate(dtype, dims).value();
  auto* p = static_cast<uint8_t*>(t.mutable_data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(seed + i * 7);
  return t;
}

// A small plan with every kind of field: dynamic I/O with a profile, three weights (one of
// odd byte size, so alignment padding is exercised), activations, and a step carrying an
// attribute of every kind.
inline plan::PlanData sample_plan() {
  using plan::ValueEntry;
  plan::PlanData p;
  p.name = "tiny";
  p.streamrt_version = "0.1.0";
  p.device = {plan::DeviceKind::kCuda, 9, 0, "NVIDIA H100 80GB HBM3"};
  auto value = [](std::string name, DataType t, Dims dims, Dims max_dims, ValueEntry::Kind k) {
    ValueEntry v;
    v.name = std::move(name);
    v.dtype = t;
    v.dims = std::move(dims);
    v.max_dims = std::move(max_dims);
    v.kind = k;
    return v;
  };
  p.values.push_back(value("x", DataType::kFloat32, {-1, 4}, {8, 4}, ValueEntry::Kind::kInput));
  p.values.push_back(value("w", DataType::kFloat32, {4, 3}, {4, 3}, ValueEntry::Kind::kWeight));
  p.values.back().weight_index = 0;
  p.values.push_back(value("b", DataType::kFloat16, {3}, {3}, ValueEntry::Kind::kWeight));
  p.values.back().weight_index = 1;
  p.values.push_back(value("h", DataType::kFloat32, {-1, 3}, {8, 3}, ValueEntry::Kind::kActivation));
  p.values.back().arena_offset = 0;
  p.values.back().arena_size = 96;
  p.values.push_back(value("idx", DataType::kInt64, {2}, {2}, ValueEntry::Kind::kActivation));
  p.values.back().arena_offset = 128;
  p.values.back().arena_size = 16;
  p.values.push_back(value("y", DataType::kFloat32, {-1, 3}, {8, 3}, ValueEntry::Kind::kOutput));
  p.values.push_back(value("e", DataType::kInt8, {5}, {5}, ValueEntry::Kind::kWeight));
  p.values.back().weight_index = 2;
  p.arena_size = 256;

  plan::IoTensor in{"x", 0, DataType::kFloat32, {-1, 4}, {1, 4}, {4, 4}, {8, 4}};
  plan::IoTensor out{"y", 5, DataType::kFloat32, {-1, 3}, {}, {}, {}};
  p.inputs.push_back(in);
  p.outputs.push_back(out);

  ir::Node mm;
  mm.name = "mm";
  mm.op_type = "MatMul";
  mm.opset = 17;
  mm.inputs = {0, 1};
  mm.outputs = {3};
  ir::Node add;
  add.name = "add";
  add.op_type = "FusedAdd";
  add.domain = "com.streamrt";
  add.opset = 1;
  add.inputs = {3, 2, ir::kNoValue, 6};
  add.outputs = {5, ir::kNoValue};
  add.attrs["i"] = ir::Attribute::make_int(-1234567890123LL);
  add.attrs["f"] = ir::Attribute::make_float(-0.375f);
  add.attrs["s"] = ir::Attribute::make_string("hello \xce\xbb");
  add.attrs["empty_s"] = ir::Attribute::make_string("");
  add.attrs["ints"] = ir::Attribute::make_ints({1, -2, INT64_MAX, INT64_MIN});
  add.attrs["no_ints"] = ir::Attribute::make_ints({});
  add.attrs["floats"] = ir::Attribute::make_floats({1.5f, -INFINITY, 1e-30f});
  ir::Attribute strs;
  strs.kind = ir::Attribute::Kind::kStrings;
  strs.strings = {"a", "", "ccc"};
  add.attrs["strings"] = strs;
  add.attrs["t_i64"] = ir::Attribute::make_tensor(
      Tensor::from_vector<int64_t>(DataType::kInt64, {2}, {7, -9}));
  add.attrs["t_bf16_scalar"] = ir::Attribute::make_tensor(
      Tensor::from_vector<uint16_t>(DataType::kBFloat16, {}, {0x3fc0}));
  add.attrs["t_empty"] = ir::Attribute::make_tensor(Tensor::allocate(DataType::kFloat32, {0, 3}).value());
  p.steps = {mm, add};

  p.weights.push_back({"w", DataType::kFloat32, {4, 3}, 0, 0, true});
  p.weights.push_back({"b", DataType::kFloat16, {3}, 0, 0, false});
  p.weights.push_back({"e", DataType::kInt8, {5}, 0, 0, false});
  p.weight_data.push_back(plan_weight(DataType::kFloat32, {4, 3}, 1));
  p.weight_data.push_back(plan_weight(DataType::kFloat16, {3}, 2));
  p.weight_data.push_back(plan_weight(DataType::kInt8, {5}, 3));
  return p;
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  if (a.nbytes() != b.nbytes()) return false;
  return a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

inline void expect_attr_eq(const ir::Attribute& a, const ir::Attribute& b, const std::string& name) {
  SCOPED_TRACE("attribute " + name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.i, b.i);
  // Bit-exact floats (covers -0, inf).
  EXPECT_EQ(std::memcmp(&a.f, &b.f, sizeof(float)), 0);
  EXPECT_EQ(a.s, b.s);
  EXPECT_EQ(a.ints, b.ints);
  ASSERT_EQ(a.floats.size(), b.floats.size());
  if (!a.floats.empty()) {
    EXPECT_EQ(std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)), 0);
  }
  EXPECT_EQ(a.strings, b.strings);
  EXPECT_EQ(a.t.empty(), b.t.empty());
  if (!a.t.empty()) {
    EXPECT_TRUE(same_bytes(a.t, b.t));
  }
}

// Every field of two plans, weight contents included.
inline void expect_plan_eq(const plan::PlanData& a, const plan::PlanData& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.streamrt_version, b.streamrt_version);
  EXPECT_EQ(a.device.kind, b.device.kind);
  EXPECT_EQ(a.device.cc_major, b.device.cc_major);
  EXPECT_EQ(a.device.cc_minor, b.device.cc_minor);
  EXPECT_EQ(a.device.name, b.device.name);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    SCOPED_TRACE("value " + std::to_string(i));
    const auto &x = a.values[i], &y = b.values[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.dims, y.dims);
    EXPECT_EQ(x.max_dims, y.max_dims);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.arena_offset, y.arena_offset);
    EXPECT_EQ(x.arena_size, y.arena_size);
    EXPECT_EQ(x.weight_index, y.weight_index);
  }
  auto io_eq = [](const std::vector<plan::IoTensor>& p, const std::vector<plan::IoTensor>& q) {
    ASSERT_EQ(p.size(), q.size());
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(p[i].name, q[i].name);
      EXPECT_EQ(p[i].value, q[i].value);
      EXPECT_EQ(p[i].dtype, q[i].dtype);
      EXPECT_EQ(p[i].dims, q[i].dims);
      EXPECT_EQ(p[i].min, q[i].min);
      EXPECT_EQ(p[i].opt, q[i].opt);
      EXPECT_EQ(p[i].max, q[i].max);
      EXPECT_EQ(p[i].seq_capacity, q[i].seq_capacity);
      EXPECT_EQ(p[i].seq_axis, q[i].seq_axis);
    }
  };
  io_eq(a.inputs, b.inputs);
  io_eq(a.outputs, b.outputs);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const auto &x = a.steps[i], &y = b.steps[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.opset, y.opset);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.attrs.size(), y.attrs.size());
    for (const auto& [name, attr] : x.attrs) {
      ASSERT_TRUE(y.attrs.count(name)) << name;
      expect_attr_eq(attr, y.attrs.at(name), name);
    }
  }
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    SCOPED_TRACE("weight " + std::to_string(i));
    EXPECT_EQ(a.weights[i].name, b.weights[i].name);
    EXPECT_EQ(a.weights[i].dtype, b.weights[i].dtype);
    EXPECT_EQ(a.weights[i].dims, b.weights[i].dims);
    EXPECT_EQ(a.weights[i].offset, b.weights[i].offset);
    EXPECT_EQ(a.weights[i].size, b.weights[i].size);
    EXPECT_EQ(a.weights[i].streamable, b.weights[i].streamable);
  }
  EXPECT_EQ(a.arena_size, b.arena_size);
  EXPECT_EQ(a.weights_stripped, b.weights_stripped);
  EXPECT_EQ(a.step_ms, b.step_ms);
  EXPECT_EQ(a.min_run_ms, b.min_run_ms);
  ASSERT_EQ(a.weight_data.size(), b.weight_data.size());
  for (size_t i = 0; i < a.weight_data.size(); ++i)
    EXPECT_TRUE(same_bytes(a.weight_data[i], b.weight_data[i])) << "weight data " << i;
}

inline plan::PlanHeader header_of(const std::vector<uint8_t>& bytes) {
  plan::PlanHeader h{};
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h;
}

inline void put_header(std::vector<uint8_t>& bytes, const plan::PlanHeader& h) {
  std::memcpy(bytes.data(), &h, sizeof(h));
}

// Recomputes both checksums from the header's own offsets (when they lie inside `bytes`),
// so that a mutation reaches the checks behind the checksums.
inline void reseal(std::vector<uint8_t>& bytes) {
  if (bytes.size() < sizeof(plan::PlanHeader)) return;
  plan::PlanHeader h = header_of(bytes);
  auto inside = [&](uint64_t off, uint64_t size) {
    return off <= bytes.size() && size <= bytes.size() - off;
  };
  if (inside(h.metadata_offset, h.metadata_size))
    h.metadata_checksum = XXH3_64bits(bytes.data() + h.metadata_offset, h.metadata_size);
  if (h.weights_size && inside(h.weights_offset, h.weights_size))
    h.weights_checksum = XXH3_64bits(bytes.data() + h.weights_offset, h.weights_size);
  put_header(bytes, h);
}

// Wraps raw metadata bytes (and an optional weights section) in a valid header.
inline std::vector<uint8_t> wrap_metadata(const uint8_t* meta, size_t meta_size,
                                          const std::vector<uint8_t>& weights = {}) {
  plan::PlanHeader h{};
  std::memcpy(h.magic, plan::kPlanMagic, 8);
  h.format_version = plan::kPlanFormatVersion;
  h.header_size = sizeof(h);
  h.metadata_offset = sizeof(h);
  h.metadata_size = meta_size;
  std::vector<uint8_t> out(sizeof(h) + meta_size);
  std::memcpy(out.data() + sizeof(h), meta, meta_size);
  if (!weights.empty()) {
    h.weights_offset = (out.size() + 4095) / 4096 * 4096;
    h.weights_size = weights.size();
    out.resize(h.weights_offset);
    out.insert(out.end(), weights.begin(), weights.end());
  }
  put_header(out, h);
  reseal(out);
  return out;
}

}  // namespace streamrt::testing
