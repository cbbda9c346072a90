// Helpers of the ExecuTorch adapter's tests: fixtures (tests/executorch/fixtures, made by
// scripts/make_executorch_fixtures.py), loading them through ExecuTorch's Module with load-time
// options, running forward and reading StreamRTBackend's options through ExecuTorch's API.
#pragma once

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "streamrt_executorch.h"

namespace streamrt::et::testing {

namespace etr = ::executorch::runtime;
using ::executorch::extension::Module;
using etr::Error;

inline std::string fixture(const std::string& name) { return std::string(STREAMRT_ET_FIXTURES) + "/" + name; }

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(f), {}};
}

inline std::vector<float> read_floats(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

// Load-time options of StreamRTBackend (string, int or bool values).
struct LoadOptions {
  etr::BackendOptions<4> opts;
  template <size_t N, typename T>
  LoadOptions& set(const char (&key)[N], T v) {
    EXPECT_EQ(opts.set_option(key, v), Error::Ok);
    return *this;
  }
  etr::LoadBackendOptionsMap map() {
    etr::LoadBackendOptionsMap m;
    EXPECT_EQ(m.set_options(kBackendName, opts.view()), Error::Ok);
    return m;
  }
};

// A fixture's Module with `forward` loaded (the delegates' init ran) under `options`.
inline std::unique_ptr<Module> load(const std::string& name, const etr::LoadBackendOptionsMap& options, Error* err) {
  auto m = std::make_unique<Module>(fixture(name + ".pte"));
  *err = m->load(options);
  if (*err == Error::Ok) *err = m->load_method("forward");
  return m;
}
inline std::unique_ptr<Module> load_ok(const std::string& name, const etr::LoadBackendOptionsMap& options = {}) {
  Error err = Error::Ok;
  auto m = load(name, options, &err);
  EXPECT_EQ(err, Error::Ok) << "loading " << name;
  return m;
}

// Runs forward on the fixture's saved input; expects the eager PyTorch output it saved.
inline void expect_forward_matches(Module& m, const std::string& name, const std::vector<int>& dims) {
  std::vector<float> in = read_floats(fixture(name + ".input0.bin"));
  const std::vector<float> want = read_floats(fixture(name + ".output0.bin"));
  auto input = ::executorch::extension::from_blob(in.data(), {dims.begin(), dims.end()});
  auto out = m.forward(std::vector<etr::EValue>{etr::EValue(*input)});
  ASSERT_TRUE(out.ok()) << "forward failed: error " << static_cast<int>(out.error());
  ASSERT_EQ(out->size(), 1u);
  const auto& t = (*out)[0].toTensor();
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  const float* got = t.const_data_ptr<float>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-4 * std::fabs(want[i])) << name << " output element " << i;
}

// StreamRTBackend's get_option for a string-valued key, through ExecuTorch's registry.
inline std::string get_string(const char* key) {
  etr::BackendOption o{};
  std::snprintf(o.key, sizeof(o.key), "%s", key);
  o.value = std::array<char, etr::kMaxOptionValueLength>{};
  const Error e = etr::get_option(kBackendName, etr::Span<etr::BackendOption>(&o, 1));
  if (e != Error::Ok) return "error " + std::to_string(static_cast<int>(e));
  return std::get<std::array<char, etr::kMaxOptionValueLength>>(o.value).data();
}
inline uint64_t budget(int engine = -1) {
  const std::string key = engine < 0 ? "weight_streaming_budget" : "weight_streaming_budget." + std::to_string(engine);
  return std::stoull(get_string(key.c_str()));
}

// set_option of one budget key (a string value) through ExecuTorch's registry.
inline Error set_budget_option(const char* key, const char* value) {
  etr::BackendOption o{};
  std::snprintf(o.key, sizeof(o.key), "%s", key);
  std::array<char, etr::kMaxOptionValueLength> a{};
  std::snprintf(a.data(), a.size(), "%s", value);
  o.value = a;
  return etr::set_option(kBackendName, etr::Span<etr::BackendOption>(&o, 1));
}

// Each test starts and ends with no engine loaded and the default core.
class EtBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(registered_backend().reset_core({}).ok()); }
  void TearDown() override { EXPECT_EQ(registered_backend().loaded_engines(), 0u) << "an engine outlived its Module"; }
};

}  // namespace streamrt::et::testing
