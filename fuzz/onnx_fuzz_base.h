// The folder the ONNX fuzz target imports against (external data resolves inside it). The
// seed-corpus test (tests/unit/import_corpus_test.cc) builds the same folder, so the
// external-data seeds load in both places:
//   <tmp>/base/weights.bin      256 bytes, byte i == i
//   <tmp>/base/data/w.bin       16 bytes of 0x01
//   <tmp>/base/escape.bin    -> <tmp>/outside.bin   (a symlink leaving the folder)
//   <tmp>/base/inside.bin    -> weights.bin         (a symlink that stays inside)
//   <tmp>/outside.bin           64 bytes
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace streamrt::fuzzing {

// Creates the folder under a fresh temp directory; returns "<tmp>/base" ("" on failure).
// The caller removes the parent directory when done.
inline std::string make_onnx_fuzz_base_dir() {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "streamrt_onnx_fuzz_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return "";
  const fs::path root(tmpl), base = root / "base";
  std::error_code ec;
  fs::create_directories(base / "data", ec);
  auto write = [](const fs::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  std::string weights(256, '\0');
  for (int i = 0; i < 256; ++i) weights[i] = static_cast<char>(i);
  write(base / "weights.bin", weights);
  write(base / "data" / "w.bin", std::string(16, '\x01'));
  write(root / "outside.bin", std::string(64, '\x02'));
  fs::create_symlink(root / "outside.bin", base / "escape.bin", ec);
  fs::create_symlink("weights.bin", base / "inside.bin", ec);
  return base.string();
}

}  // namespace streamrt::fuzzing
