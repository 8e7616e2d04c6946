// Test-only: GGUF bytes written field by field (magic, version, counts, then whatever the test
// appends), for files no writer would produce and for metadata-only files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace proctor::testing {

class GgufBuilder {
 public:
  GgufBuilder(uint32_t version, uint64_t tensors, uint64_t kvs) {
    Raw("GGUF", 4);
    U32(version);
    U64(tensors);
    U64(kvs);
  }
  GgufBuilder& U32(uint32_t v) { return Raw(&v, 4); }
  GgufBuilder& U64(uint64_t v) { return Raw(&v, 8); }
  GgufBuilder& Str(std::string_view s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  GgufBuilder& Raw(const void* p, size_t n) {
    text_.append(static_cast<const char*>(p), n);
    return *this;
  }
  GgufBuilder& Pad(size_t alignment) {
    while (text_.size() % alignment != 0) text_.push_back('\0');
    return *this;
  }
  GgufBuilder& Zeros(size_t n) {
    text_.append(n, '\0');
    return *this;
  }
  // Whole key-value pairs (GGUF value types: 4 uint32, 6 float32, 7 bool, 8 string, 9 array).
  GgufBuilder& KeyU32(std::string_view key, uint32_t v) { return Str(key).U32(4).U32(v); }
  GgufBuilder& KeyF32(std::string_view key, float v) { return Str(key).U32(6).Raw(&v, 4); }
  GgufBuilder& KeyStr(std::string_view key, std::string_view v) { return Str(key).U32(8).Str(v); }
  GgufBuilder& KeyBools(std::string_view key, const std::vector<bool>& v) {
    Str(key).U32(9).U32(7).U64(v.size());
    for (const bool b : v) text_.push_back(b ? '\1' : '\0');
    return *this;
  }
  std::vector<uint8_t> bytes() const { return std::vector<uint8_t>(text_.begin(), text_.end()); }

 private:
  std::string text_;
};

}  // namespace proctor::testing
