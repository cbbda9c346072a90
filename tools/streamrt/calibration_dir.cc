// build --calibration-dir: the calibration samples of WeightQuant::calibration from a folder of
// .npy files (one sample: INPUT_NAME.npy each) or of sub-folders (one sample each, in name order).
#include <algorithm>
#include <filesystem>

#include "commands.h"
#include "core/npy.h"

namespace streamrt::cli {
namespace {

namespace fs = std::filesystem;

// More samples than this is a mistake (GPTQ needs a few hundred sequences at most).
constexpr size_t kMaxSamples = 100000;

Result<std::vector<fs::path>> sorted_entries(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
  if (ec) return invalid_argument("--calibration-dir: cannot list '" + dir.string() + "': " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::map<std::string, Tensor>> load_sample(const fs::path& dir) {
  SRT_ASSIGN_OR_RETURN(auto entries, sorted_entries(dir));
  std::map<std::string, Tensor> sample;
  for (const fs::path& p : entries) {
    if (p.extension() != ".npy") continue;
    SRT_ASSIGN_OR_RETURN(Tensor t, load_npy(p.string()));
    sample[p.stem().string()] = std::move(t);
  }
  if (sample.empty()) return invalid_argument("--calibration-dir: '" + dir.string() + "' holds no .npy file");
  return sample;
}

}  // namespace

Result<std::vector<std::map<std::string, Tensor>>> load_calibration_dir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return invalid_argument("--calibration-dir: '" + dir + "' is not a folder");
  SRT_ASSIGN_OR_RETURN(auto entries, sorted_entries(dir));
  std::vector<std::map<std::string, Tensor>> samples;
  const bool flat = std::any_of(entries.begin(), entries.end(), [](const fs::path& p) { return p.extension() == ".npy"; });
  if (flat) {
    SRT_ASSIGN_OR_RETURN(auto s, load_sample(dir));
    samples.push_back(std::move(s));
    return samples;
  }
  for (const fs::path& p : entries) {
    if (!fs::is_directory(p, ec)) continue;
    if (samples.size() == kMaxSamples)
      return invalid_argument("--calibration-dir: '" + dir + "' holds more than " + std::to_string(kMaxSamples) +
                              " samples");
    SRT_ASSIGN_OR_RETURN(auto s, load_sample(p));
    samples.push_back(std::move(s));
  }
  if (samples.empty())
    return invalid_argument("--calibration-dir: '" + dir + "' holds neither .npy files nor folders of them");
  return samples;
}

}  // namespace streamrt::cli
