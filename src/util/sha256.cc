#include "util/sha256.h"

#include <openssl/evp.h>

#include <vector>

#include "util/error.h"
#include "util/file.h"

namespace proctor {

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  CHECK(context_ != nullptr);
  CHECK(EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

void Sha256::Update(std::span<const uint8_t> bytes) {
  CHECK(!finished_);
  if (bytes.empty()) return;
  CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), bytes.data(), bytes.size()) == 1);
}

std::string Sha256::HexDigest() {
  CHECK(!finished_);
  finished_ = true;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest, &length) == 1);
  CHECK(length == 32);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 15];
  }
  return hex;
}

std::string Sha256Hex(std::span<const uint8_t> bytes) {
  Sha256 digest;
  digest.Update(bytes);
  return digest.HexDigest();
}

std::string Sha256Hex(std::string_view text) {
  Sha256 digest;
  digest.Update(text);
  return digest.HexDigest();
}

std::string Sha256FileHex(const std::filesystem::path& path) {
  ReadOnlyFile file(path);
  Sha256 digest;
  std::vector<uint8_t> buffer(1 << 20);
  for (uint64_t offset = 0; offset < file.size();) {
    const uint64_t n = std::min<uint64_t>(buffer.size(), file.size() - offset);
    file.ReadAt(offset, std::span<uint8_t>(buffer.data(), n));
    digest.Update(std::span<const uint8_t>(buffer.data(), n));
    offset += n;
  }
  return digest.HexDigest();
}

}  // namespace proctor
