// SHA-256 digests (OpenSSL libcrypto, EVP API) as lowercase hex: of a buffer, or of a file read
// in a stream (constant memory, any size). Corpora and dumps are pinned by these digests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace proctor {

// Incremental digest: Update() any number of times, then HexDigest() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::span<const uint8_t> bytes);
  void Update(std::string_view text) {
    Update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  // The 64-character lowercase hex digest. The object cannot be updated afterwards.
  std::string HexDigest();

 private:
  void* context_;  // EVP_MD_CTX*
  bool finished_ = false;
};

std::string Sha256Hex(std::span<const uint8_t> bytes);
std::string Sha256Hex(std::string_view text);
// Streams the file in 1 MiB pieces; Error("[io] ...") names the file when it cannot be read.
std::string Sha256FileHex(const std::filesystem::path& path);

}  // namespace proctor
