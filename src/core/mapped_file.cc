#include "core/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/file_io.h"

namespace streamrt {

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path, uint64_t max_size) {
  SRT_ASSIGN_OR_RETURN(InputFile in, InputFile::open(path, max_size));
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  if (in.size() > 0) {
    // The mapping stays valid after the descriptor is closed; none is held for its lifetime.
    void* p = ::mmap(nullptr, static_cast<size_t>(in.size()), PROT_READ, MAP_PRIVATE, in.fd(), 0);
    if (p == MAP_FAILED) return io_error("cannot mmap '" + path + "': " + std::strerror(errno));
    file->data_ = static_cast<const uint8_t*>(p);
    file->size_ = static_cast<size_t>(in.size());
  }
  return file;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace streamrt
