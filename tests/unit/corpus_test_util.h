// Seed corpora of the fuzz targets (fuzz/corpus/<target>/), generated and checked by the
// *_corpus_test.cc files: inputs named valid_* must pass, corrupt_* must fail with a message (of
// one of the expected codes, when given); other names must only not crash. With the environment
// variable the test names set to a folder, the generated seeds are written to <folder>/<target>/.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "streamrt/status.h"

namespace streamrt::testing {

using Seeds = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

inline void expect_named_outcome(const std::string& name, const Status& st, std::initializer_list<StatusCode> codes) {
  SCOPED_TRACE(name);
  if (name.rfind("valid_", 0) == 0) {
    EXPECT_TRUE(st.ok()) << st.to_string();
  } else if (name.rfind("corrupt_", 0) == 0) {
    ASSERT_FALSE(st.ok());
    EXPECT_FALSE(st.message().empty());
    if (codes.size()) {
      EXPECT_NE(std::find(codes.begin(), codes.end(), st.code()), codes.end()) << st.to_string();
    }
  }
}

// Checks the generated `seeds` of `target`; writes them when the variable `env` names a folder.
template <typename Outcome>
void check_seeds_and_maybe_write(const Seeds& seeds, const char* env, const std::string& target, Outcome outcome,
                                 std::initializer_list<StatusCode> codes = {}) {
  for (const auto& [name, bytes] : seeds) expect_named_outcome(name, outcome(bytes), codes);
  const char* out = std::getenv(env);
  if (!out || !*out) return;
  const std::filesystem::path dir = std::filesystem::path(out) / target;
  std::filesystem::create_directories(dir);
  for (const auto& [name, bytes] : seeds) {
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << name;
  }
}

// Checks the committed corpus of `target` (fuzz/corpus/<target>/) by the same names.
template <typename Outcome>
void check_committed_corpus(const std::string& target, Outcome outcome, std::initializer_list<StatusCode> codes = {}) {
  const std::filesystem::path dir = std::filesystem::path(STREAMRT_SOURCE_DIR) / "fuzz" / "corpus" / target;
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " not found";
  size_t count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    expect_named_outcome(e.path().filename().string(), outcome(bytes), codes);
    ++count;
  }
  EXPECT_GT(count, 0u);
}

}  // namespace streamrt::testing
