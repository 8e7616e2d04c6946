#include "tensor/dtype.h"

#include <array>
#include <cctype>
#include <cstring>
#include <string>

#include "util/error.h"
#include "util/half.h"

namespace proctor {
namespace {

constexpr std::array<DTypeInfo, static_cast<size_t>(DType::kCount)> kInfo = {{
    {"f32", 1, 4, true},       {"f16", 1, 2, true},       {"bf16", 1, 2, true},
    {"f64", 1, 8, false},      {"i8", 1, 1, false},       {"u8", 1, 1, false},
    {"i16", 1, 2, false},      {"u16", 1, 2, false},      {"i32", 1, 4, false},
    {"u32", 1, 4, false},      {"i64", 1, 8, false},      {"u64", 1, 8, false},
    {"bool", 1, 1, false},     {"q8_0", 32, 34, false},   {"q4_0", 32, 18, false},
    {"q4_1", 32, 20, false},   {"q5_0", 32, 22, false},   {"q5_1", 32, 24, false},
    {"q2_k", 256, 84, false},  {"q3_k", 256, 110, false}, {"q4_k", 256, 144, false},
    {"q5_k", 256, 176, false}, {"q6_k", 256, 210, false}, {"iq4_nl", 32, 18, false},
}};

}  // namespace

const DTypeInfo& Info(DType t) {
  const auto i = static_cast<size_t>(t);
  CHECK(i < kInfo.size());
  return kInfo[i];
}

bool FitsBlocks(DType t, uint64_t n) { return n % Info(t).block_elems == 0; }

size_t BytesFor(DType t, uint64_t n) {
  const DTypeInfo& info = Info(t);
  CHECK_MSG(n % info.block_elems == 0, "{} elements are not whole blocks of {}", n, info.name);
  return static_cast<size_t>(n / info.block_elems * info.block_bytes);
}

std::optional<DType> ParseDType(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < kInfo.size(); ++i) {
    if (kInfo[i].name == lower) return static_cast<DType>(i);
  }
  return std::nullopt;
}

float FloatElement(DType type, const uint8_t* data, size_t i) {
  if (type == DType::kF32) {
    float f;
    std::memcpy(&f, data + 4 * i, 4);
    return f;
  }
  CHECK_MSG(type == DType::kF16 || type == DType::kBF16, "FloatElement of {}", Name(type));
  uint16_t h;
  std::memcpy(&h, data + 2 * i, 2);
  return type == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
}

}  // namespace proctor
