#include "cache/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace streamrt::cache {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
};

// EVP failures are allocation failures; a key computed from a half-initialized context would
// be silently wrong, so they abort (an internal invariant, not bad input).
static void check(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "streamrt: OpenSSL %s failed\n", what);
    std::abort();
  }
}

Sha256::Sha256() : ctx_(new Ctx) {
  ctx_->md = EVP_MD_CTX_new();
  check(ctx_->md != nullptr, "EVP_MD_CTX_new");
  check(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_->md);
  delete ctx_;
}

void Sha256::update(const void* data, size_t size) {
  if (size) check(EVP_DigestUpdate(ctx_->md, data, size), "EVP_DigestUpdate");
}

Digest Sha256::finish() {
  Digest d{};
  unsigned int len = 0;
  check(EVP_DigestFinal_ex(ctx_->md, d.data(), &len), "EVP_DigestFinal_ex");
  check(len == d.size(), "SHA-256 length");
  return d;
}

Digest sha256(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.finish();
}

std::string to_hex(const Digest& d) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(d.size() * 2, '0');
  for (size_t i = 0; i < d.size(); ++i) {
    s[2 * i] = kHex[d[i] >> 4];
    s[2 * i + 1] = kHex[d[i] & 15];
  }
  return s;
}

}  // namespace streamrt::cache
