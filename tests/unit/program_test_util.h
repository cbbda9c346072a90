// Helpers for program tests: a small program that uses every kind of field, a stub backend
// whose init / execute / destroy / options are injectable and counted, and byte surgery on
// serialized programs (checksum recomputed).
#pragma once

#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "program/program_format.h"
#include "streamrt/backend.h"

namespace streamrt::testing {

// y = (x + c) * scale, where "+" is a portable Add kernel and "* scale" a StubBackend delegate
// whose blob is the text "scale=<n>". Values: x input f32[2,3], c constant f32[2,3], s the
// sum, y the output, plus an int, a double list and a constant tensor list (unused by the
// instructions, there so every field is written and read back).
struct SampleProgram {
  program::ProgramData data;
  std::vector<std::vector<uint8_t>> segments;
  std::vector<uint8_t> bytes() {
    auto r = program::serialize_program(data, segments);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : std::vector<uint8_t>{};
  }
};

inline const std::vector<float> kSampleConstant = {0.5f, -1.f, 2.f, 4.f, -8.f, 16.f};

inline std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

inline SampleProgram sample_program(const std::string& backend = "StubBackend", int scale = 3) {
  using program::ValueData;
  SampleProgram p;
  p.data.streamrt_version = "0.1.0";
  auto tensor = [](std::string name, Dims dims, int32_t segment = -1) {
    ValueData v;
    v.tag = EValue::Tag::kTensor;
    v.name = std::move(name);
    v.dtype = DataType::kFloat32;
    v.dims = std::move(dims);
    v.constant_segment = segment;
    return v;
  };
  program::MethodData m;
  m.name = "forward";
  m.values = {tensor("x", {2, 3}), tensor("c", {2, 3}, 0), tensor("s", {2, 3}), tensor("y", {-1, 3})};
  ValueData i;
  i.tag = EValue::Tag::kInt;
  i.name = "seven";
  i.int_value = 7;
  ValueData dl;
  dl.tag = EValue::Tag::kDoubleList;
  dl.name = "ratios";
  dl.double_list = {0.25, 0.5};
  ValueData tl;
  tl.tag = EValue::Tag::kTensorList;
  tl.name = "consts";
  tl.tensor_list = {1};
  m.values.push_back(i);
  m.values.push_back(dl);
  m.values.push_back(tl);
  m.inputs = {0};
  m.outputs = {3};
  program::Instruction add;
  add.kind = program::Instruction::Kind::kKernelCall;
  add.kernel.name = "add";
  add.kernel.op_type = "Add";
  add.kernel.opset = 17;
  add.kernel.inputs = {0, 1};
  add.kernel.outputs = {2};
  add.kernel.attrs["note"] = ir::Attribute::make_string("an unused attribute");
  program::Instruction call;
  call.kind = program::Instruction::Kind::kDelegateCall;
  call.delegate = {0, {2}, {3}};
  m.instructions = {add, call};
  const std::string spec = "scale";
  m.delegates.push_back({backend, 1, {{"mode", std::vector<uint8_t>(spec.begin(), spec.end())}}});
  p.data.methods.push_back(m);
  p.data.segments.resize(2);
  p.segments.push_back(float_bytes(kSampleConstant));
  const std::string blob = "scale=" + std::to_string(scale);
  p.segments.emplace_back(blob.begin(), blob.end());
  return p;
}

inline Tensor f32_tensor(const Dims& dims, const std::vector<float>& v) {
  return Tensor::from_vector<float>(DataType::kFloat32, dims, v);
}

inline std::vector<float> floats_of(const EValue& v) {
  EXPECT_TRUE(v.is_tensor());
  if (!v.is_tensor()) return {};
  return v.tensor()->to_float_vector().value();
}

inline program::ContainerHeader program_header(const std::vector<uint8_t>& b) {
  program::ContainerHeader h;
  std::memcpy(&h, b.data(), sizeof(h));
  return h;
}

inline void put_program_header(std::vector<uint8_t>& b, const program::ContainerHeader& h) {
  std::memcpy(b.data(), &h, sizeof(h));
}

// Recomputes the FlatBuffer checksum after the bytes were edited.
inline void reseal_program(std::vector<uint8_t>& b) {
  auto h = program_header(b);
  h.flatbuffer_checksum = XXH3_64bits(b.data() + h.flatbuffer_offset, h.flatbuffer_size);
  put_program_header(b, h);
}

inline void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A backend whose behaviour each test injects; by default it multiplies its single input by
// the "scale=<n>" of its blob. Counts inits and destroys per handle.
class StubBackend : public BackendInterface {
 public:
  using InitFn = std::function<Result<DelegateHandle*>(BackendInitContext&, FreeableBuffer*, std::span<const CompileSpec>)>;
  using ExecuteFn = std::function<Status(BackendExecutionContext&, DelegateHandle*, std::span<EValue*>)>;
  using SetOptionFn = std::function<Status(BackendOptionContext&, std::span<const BackendOption>)>;

  bool available = true;
  InitFn on_init;        // replaces the default init when set
  ExecuteFn on_execute;  // replaces the default execute when set
  SetOptionFn on_set_option;
  std::function<void(BackendInitContext&)> observe_init;  // runs first in the default init

  void reset() {
    std::lock_guard<std::mutex> lock(mu_);
    available = true;
    on_init = nullptr;
    on_execute = nullptr;
    on_set_option = nullptr;
    observe_init = nullptr;
    destroyed_.clear();
    inits_ = 0;
    live_.clear();
    for (DelegateHandle* h : owned_) delete static_cast<int*>(h);
    owned_.clear();
  }
  int inits() const { return inits_; }
  // How often each handle was destroyed.
  std::map<DelegateHandle*, int> destroyed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return destroyed_;
  }
  std::vector<DelegateHandle*> live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }

  bool is_available() const override { return available; }

  Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) override {
    Result<DelegateHandle*> r = on_init ? on_init(ctx, processed, specs) : default_init(ctx, processed, specs);
    if (r.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      ++inits_;
      live_.push_back(*r);
    }
    return r;
  }

  Status execute(BackendExecutionContext& ctx, DelegateHandle* h, std::span<EValue*> args) override {
    if (on_execute) return on_execute(ctx, h, args);
    if (args.size() != 2 || !args[0]->is_tensor()) return invalid_argument("stub: expected one tensor in, one out");
    const float scale = static_cast<float>(*static_cast<int*>(h));
    std::vector<float> v = args[0]->tensor()->to_float_vector().value();
    for (float& f : v) f *= scale;
    *args[1] = EValue(Tensor::from_vector<float>(DataType::kFloat32, args[0]->tensor()->dims(), v));
    return ok_status();
  }

  void destroy(DelegateHandle* h) override {
    std::lock_guard<std::mutex> lock(mu_);
    // Counted only: the memory is freed by reset(), so that no address is reused for another
    // handle while a test counts destroys per handle.
    ++destroyed_[h];
    live_.erase(std::remove(live_.begin(), live_.end(), h), live_.end());
  }

  Status set_option(BackendOptionContext& ctx, std::span<const BackendOption> options) override {
    if (on_set_option) return on_set_option(ctx, options);
    return BackendInterface::set_option(ctx, options);
  }

 private:
  Result<DelegateHandle*> default_init(BackendInitContext& ctx, FreeableBuffer* processed, std::span<const CompileSpec>) {
    if (observe_init) observe_init(ctx);
    std::string blob(static_cast<const char*>(processed->data()), processed->size());
    if (blob.rfind("scale=", 0) != 0) return invalid_program("stub: bad blob '" + blob + "'");
    auto* h = static_cast<DelegateHandle*>(new int(std::stoi(blob.substr(6))));
    std::lock_guard<std::mutex> lock(mu_);
    owned_.insert(h);
    return h;
  }

  mutable std::mutex mu_;
  int inits_ = 0;
  std::map<DelegateHandle*, int> destroyed_;
  std::vector<DelegateHandle*> live_;
  std::set<DelegateHandle*> owned_;  // made by the default init
};

// The stub registered as "StubBackend" (once per process).
inline StubBackend& stub_backend() {
  static StubBackend* stub = [] {
    auto* s = new StubBackend();
    EXPECT_TRUE(register_backend("StubBackend", s).ok());
    return s;
  }();
  return *stub;
}

}  // namespace streamrt::testing
