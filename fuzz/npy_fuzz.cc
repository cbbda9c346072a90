// libFuzzer target for the .npy reader (src/core/npy.cc, parse_npy). A rejection must say
// why; an accepted array must be consistent (its bytes fill its dims) and must survive
// save_npy + load_npy unchanged.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/npy.h"

namespace {

struct TempFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("streamrt_npy_fuzz_" + std::to_string(::getpid()) + ".npy")).string();
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TempFile tmp;
  auto t = streamrt::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  if (!t.ok()) {
    if (t.status().message().empty()) std::abort();
    return 0;
  }
  if (t->numel() < 0 || t->nbytes() > size) std::abort();
  if (!streamrt::save_npy(*t, tmp.path).ok()) std::abort();
  auto back = streamrt::load_npy(tmp.path);
  if (!back.ok() || back->dtype() != t->dtype() || back->dims() != t->dims() || back->nbytes() != t->nbytes())
    std::abort();
  if (t->nbytes() && std::memcmp(back->data(), t->data(), t->nbytes()) != 0) std::abort();
  return 0;
}
