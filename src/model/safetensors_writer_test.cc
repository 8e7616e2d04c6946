// The safetensors writer: what it writes reads back through the validating reader (itself
// tested against files Python writes), the header is padded to 8 bytes as the Python library
// pads it, and bad input is an Error naming the tensor.
#include "model/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "model/safetensors.h"
#include "model/test_util.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

std::span<const uint8_t> Bytes(const auto& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(values[0])};
}

TEST(SafetensorsWriter, RoundTripsThroughTheReader) {
  testing::TempDir temp;
  const std::vector<float> f32{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f};
  const std::vector<uint16_t> bf16{0x3F80, 0xC000, 0x4040};
  const std::vector<uint32_t> u32{0xDEADBEEF, 7};
  const auto path = temp.path() / "m.safetensors";
  WriteSafetensors(path, {{"w", DType::kF32, {2, 3}, Bytes(f32)},
                          {"norm", DType::kBF16, {3}, Bytes(bf16)},
                          {"packed", DType::kU32, {1, 2}, Bytes(u32)}});
  const std::string file = ReadFileToString(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);
  EXPECT_EQ(header_length % 8, 0u);
  EXPECT_EQ(file.size(), 8 + header_length + f32.size() * 4 + bf16.size() * 2 + u32.size() * 4);
  EXPECT_NE(file.find("\"__metadata__\":{\"format\":\"pt\"}"), std::string::npos);

  WeightStore store;
  LoadSafetensorsInto(path, store);
  ASSERT_EQ(store.size(), 3u);
  const TensorInfo& w = store.Get("w");
  EXPECT_EQ(w.type, DType::kF32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(w.data, f32.data(), 24), 0);
  const TensorInfo& norm = store.Get("norm");
  EXPECT_EQ(norm.type, DType::kBF16);
  EXPECT_EQ(norm.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(std::memcmp(norm.data, bf16.data(), 6), 0);
  const TensorInfo& packed = store.Get("packed");
  EXPECT_EQ(packed.type, DType::kU32);
  EXPECT_EQ(std::memcmp(packed.data, u32.data(), 8), 0);
}

TEST(SafetensorsWriter, BadInputIsAnErrorNamingTheTensor) {
  testing::TempDir temp;
  const std::vector<float> three{1, 2, 3};
  const auto path = temp.path() / "bad.safetensors";
  try {
    WriteSafetensors(path, {{"short", DType::kF32, {2, 2}, Bytes(three)}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("short"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs 16 bytes, got 12"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WriteSafetensors(path, {{"a", DType::kF32, {3}, Bytes(three)},
                                       {"a", DType::kF32, {3}, Bytes(three)}}),
               Error);
  EXPECT_THROW(WriteSafetensors(path, {{"q", DType::kQ8_0, {3}, Bytes(three)}}), Error);
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing half-written
}

}  // namespace
}  // namespace proctor
