// A read-only memory mapping of a whole file (RAII: unmapped on destruction).
// Used to read plan files in place: weights become views into the mapping, so no second
// host copy of them exists. The file must not be truncated while it is mapped (the kernel
// would raise SIGBUS on access past the new end); plans are written by rename, never in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "streamrt/status.h"

namespace streamrt {

class MappedFile {
 public:
  // No plan or program comes near this; a larger "file" is a mistake, not data.
  static constexpr uint64_t kDefaultMaxSize = uint64_t{1} << 40;  // 1 TiB

  // Opens (core/file_io.h: never blocks on a FIFO or device) and maps `path` read-only.
  // kIoError naming the path when it cannot be opened, is not a regular file (saying what it
  // is), or cannot be mapped; kInvalidArgument when larger than `max_size`. An empty file maps
  // to data() == nullptr.
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path, uint64_t max_size = kDefaultMaxSize);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace streamrt
