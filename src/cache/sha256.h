// SHA-256 through OpenSSL's EVP interface, for cache keys and entry checksums.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace streamrt::cache {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  // The digest of everything updated so far; the object is then spent.
  Digest finish();

 private:
  struct Ctx;
  Ctx* ctx_;
};

Digest sha256(const void* data, size_t size);
std::string to_hex(const Digest& d);
inline std::string sha256_hex(std::string_view s) { return to_hex(sha256(s.data(), s.size())); }

}  // namespace streamrt::cache
