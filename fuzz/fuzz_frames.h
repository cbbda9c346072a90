// Inputs of the fuzz targets that take several byte strings at once (plan_external,
// delegate_init): a sequence of frames, each [tag: 1 byte][size: 4 bytes, little endian][bytes].
// A size past the end of the input is cut to it, so every input reads as frames and libFuzzer's
// mutations of a payload (inserted or erased bytes) keep the frames after it where they were
// as long as the size still covers them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace streamrt::fuzzing {

struct Frame {
  uint8_t tag = 0;
  std::span<const uint8_t> bytes;
  std::string_view text() const { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }
};

// At most `max_frames`: bounds the work one input asks for.
inline std::vector<Frame> read_frames(std::span<const uint8_t> in, size_t max_frames = 32) {
  std::vector<Frame> out;
  size_t pos = 0;
  while (pos < in.size() && out.size() < max_frames) {
    Frame f;
    f.tag = in[pos++];
    uint32_t size = 0;
    const size_t have = std::min<size_t>(4, in.size() - pos);
    std::memcpy(&size, in.data() + pos, have);  // little endian hosts only, as the formats are
    pos += have;
    const size_t n = std::min<size_t>(size, in.size() - pos);
    f.bytes = in.subspan(pos, n);
    pos += n;
    out.push_back(f);
  }
  return out;
}

inline void add_frame(std::vector<uint8_t>& out, uint8_t tag, std::span<const uint8_t> bytes) {
  out.push_back(tag);
  const auto size = static_cast<uint32_t>(bytes.size());
  const auto* s = reinterpret_cast<const uint8_t*>(&size);
  out.insert(out.end(), s, s + sizeof(size));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

inline void add_frame(std::vector<uint8_t>& out, uint8_t tag, std::string_view text) {
  add_frame(out, tag, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// A copy of `bytes` starting `misalign` (mod 64) bytes past a 64-byte boundary and ending
// exactly where they end, in memory of its own: ASan sees a read past it, or after reset().
// Where ExecuTorch's loaders put named data varies likewise (mapped, or a buffer of their own).
class OwnedBytes {
 public:
  OwnedBytes(std::span<const uint8_t> bytes, size_t misalign) : size_(bytes.size()) {
    misalign %= 64;
    void* p = nullptr;
    if (posix_memalign(&p, 64, std::max<size_t>(1, misalign + size_)) != 0) std::abort();
    block_.reset(static_cast<uint8_t*>(p));
    data_ = block_.get() + misalign;
    if (size_) std::memcpy(data_, bytes.data(), size_);
  }
  uint8_t* data() const { return block_ ? data_ : nullptr; }
  size_t size() const { return size_; }
  void reset() { block_.reset(); }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> block_;
  uint8_t* data_ = nullptr;
  size_t size_;
};

}  // namespace streamrt::fuzzing
