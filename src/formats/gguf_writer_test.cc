// GGUF writer: a small file's bytes equal the ones spelled out field by field
// (testing::GgufBuilder: header, key/values, tensor infos, padding, data); every metadata type
// (nested and string arrays included) copied from a file survives a write and a read; a custom
// general.alignment is honoured; inconsistent input is an error that leaves no file. (Whole
// files byte-identical to llama-quantize's: model/gguf_quantize_oracle_test.cc.)
#include "formats/gguf_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "formats/gguf.h"
#include "formats/testing_gguf_builder.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;
using testing::GgufBuilder;
using testing::TempDir;

std::vector<uint8_t> FileBytes(const fs::path& path) {
  const std::string s = ReadFileToString(path);
  return std::vector<uint8_t>(s.begin(), s.end());
}

FillGgufTensor FillWith(const std::vector<std::vector<uint8_t>>& data) {
  return [data](const GgufTensorSpec& spec, const GgufByteSink& sink) {
    const size_t i = spec.name == "a" ? 0 : 1;
    sink(std::span<const uint8_t>(data[i].data(), data[i].size() / 2));
    sink(std::span<const uint8_t>(data[i].data() + data[i].size() / 2,
                                  data[i].size() - data[i].size() / 2));
  };
}

TEST(GgufWriter, BytesSpelledOutFieldByField) {
  TempDir tmp;
  GgufMetadata metadata;
  metadata.SetString("general.architecture", "llama");
  metadata.SetUint32("general.file_type", 7);
  // a: F32 [3] (12 bytes, padded to 32); b: Q8_0 [32, 2] (2 blocks of 34 bytes).
  std::vector<uint8_t> a(12), b(68);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(200 - i);
  const fs::path path = tmp.path() / "m.gguf";
  const uint64_t size = WriteGguf(
      path, metadata, {{"a", {3}, DType::kF32}, {"b", {32, 2}, DType::kQ8_0}}, FillWith({a, b}));
  GgufBuilder expected(3, 2, 2);
  expected.KeyStr("general.architecture", "llama").KeyU32("general.file_type", 7);
  expected.Str("a").U32(1).U64(3).U32(0).U64(0);
  expected.Str("b").U32(2).U64(32).U64(2).U32(8).U64(32);
  expected.Pad(32).Raw(a.data(), a.size()).Pad(32).Raw(b.data(), b.size()).Pad(32);
  EXPECT_EQ(FileBytes(path), expected.bytes());
  EXPECT_EQ(size, expected.bytes().size());
}

TEST(GgufWriter, EveryValueTypeSurvivesACopy) {
  TempDir tmp;
  GgufBuilder source(3, 0, 12);
  source.Str("u8").U32(0).Raw("\xfe", 1);
  source.Str("i8").U32(1).Raw("\x80", 1);
  const uint16_t u16 = 65000;
  source.Str("u16").U32(2).Raw(&u16, 2);
  const int32_t i32 = -123456;
  source.Str("i32").U32(5).Raw(&i32, 4);
  source.KeyF32("f32", 0.1f);
  const double f64 = -2.5e300;
  source.Str("f64").U32(12).Raw(&f64, 8);
  source.Str("bool").U32(7).Raw("\x01", 1);
  const int64_t i64 = -(int64_t{1} << 62);
  source.Str("i64").U32(11).U64(static_cast<uint64_t>(i64));
  source.KeyStr("str", "caf\xc3\xa9 \"quoted\"");
  source.Str("strings").U32(9).U32(8).U64(3).Str("<s>").Str("").Str("\xe2\x96\x81the");
  source.KeyBools("bools", {true, false, true});
  // An array of two arrays of int32: [[1, 2], [3]].
  source.Str("nested").U32(9).U32(9).U64(2);
  source.U32(5).U64(2).U32(1).U32(2).U32(5).U64(1).U32(3);
  const auto bytes = source.Pad(32).bytes();
  const auto file = GgufFile::Parse(bytes, "source.gguf");

  GgufMetadata metadata;
  for (const auto& [key, value] : file->metadata()) metadata.Copy(key, value);
  const fs::path path = tmp.path() / "copy.gguf";
  WriteGguf(path, metadata, {}, FillWith({}));
  EXPECT_EQ(FileBytes(path), bytes);  // same values, same order, same encoding
  const auto copy = GgufFile::Open(path);
  EXPECT_EQ(copy->GetInt("i32"), -123456);
  EXPECT_EQ(copy->GetFloat("f32"), 0.1f);
  EXPECT_EQ(copy->GetStringArray("strings")[2], "\xe2\x96\x81the");
  EXPECT_EQ(copy->Get("nested").Arrays()[1].Ints(), std::vector<int64_t>{3});
}

TEST(GgufWriter, TypedSettersSpellTheirValuesAsGgufDoes) {
  TempDir tmp;
  GgufMetadata metadata;
  metadata.SetFloat32("eps", 1e-6f);
  metadata.SetBool("add_bos", true);
  const std::vector<std::string> tokens = {"<s>", "",
                                           "\xe2\x96\x81"
                                           "a b"};
  metadata.SetStringArray("tokens", tokens);
  const std::vector<int32_t> types = {3, 1, -6};
  metadata.SetInt32Array("types", types);
  const std::vector<float> scores = {-1000.0f, 0.5f};
  metadata.SetFloat32Array("scores", scores);
  const fs::path path = tmp.path() / "m.gguf";
  WriteGguf(path, metadata, {}, FillWith({}));
  GgufBuilder expected(3, 0, 5);
  expected.KeyF32("eps", 1e-6f);
  expected.Str("add_bos").U32(7).Raw("\x01", 1);
  expected.Str("tokens").U32(9).U32(8).U64(3).Str("<s>").Str("").Str(
      "\xe2\x96\x81"
      "a b");
  expected.Str("types").U32(9).U32(5).U64(3);
  for (const int32_t t : types) expected.Raw(&t, 4);
  expected.Str("scores").U32(9).U32(6).U64(2);
  for (const float f : scores) expected.Raw(&f, 4);
  EXPECT_EQ(FileBytes(path), expected.Pad(32).bytes());
  const auto file = GgufFile::Open(path);
  EXPECT_EQ(file->GetIntArray("types"), (std::vector<int64_t>{3, 1, -6}));
  EXPECT_EQ(file->GetFloatArray("scores"), scores);
  EXPECT_TRUE(file->Get("add_bos").AsBool());
}

TEST(GgufWriter, SetMovesTheKeyToTheEndAndAlignmentIsHonoured) {
  TempDir tmp;
  GgufMetadata metadata;
  metadata.SetUint32("general.file_type", 0);
  metadata.SetUint32("general.alignment", 64);
  metadata.SetString("general.name", "x");
  metadata.SetUint32("general.file_type", 15);  // replaces, and now comes last
  EXPECT_EQ(metadata.size(), 3u);
  EXPECT_EQ(metadata.Alignment(), 64u);
  std::vector<uint8_t> a(12, 7), b(4, 9);
  const fs::path path = tmp.path() / "m.gguf";
  WriteGguf(path, metadata, {{"a", {3}, DType::kF32}, {"b", {2}, DType::kF16}}, FillWith({a, b}));
  const auto file = GgufFile::Open(path);
  EXPECT_EQ(file->metadata().back().first, "general.file_type");
  EXPECT_EQ(file->GetInt("general.file_type"), 15);
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  EXPECT_EQ(file->FindTensor("b")->offset, 64u);
  EXPECT_EQ(std::vector<uint8_t>(file->FindTensor("b")->data, file->FindTensor("b")->data + 4), b);
}

TEST(GgufWriter, InconsistentInputIsAnErrorAndLeavesNoFile) {
  TempDir tmp;
  const fs::path path = tmp.path() / "bad.gguf";
  GgufMetadata metadata;
  std::vector<uint8_t> a(12), b(8);
  EXPECT_NE(ErrorOf([&] {
              WriteGguf(path, metadata, {{"a", {3}, DType::kF32}, {"b", {3}, DType::kF32}},
                        FillWith({a, b}));
            }).find("tensor \"b\" (f32) produced 8 bytes, expected 12"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              WriteGguf(path, metadata, {{"a", {3}, DType::kF32}, {"a", {3}, DType::kF32}},
                        FillWith({a, a}));
            }).find("tensor \"a\" is listed twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              WriteGguf(path, metadata, {{"a", {33}, DType::kQ8_0}}, FillWith({a}));
            }).find("rows of 33 values are not whole q8_0 blocks of 32"),
            std::string::npos);
  metadata.SetUint32("general.alignment", 48);
  EXPECT_NE(ErrorOf([&] { metadata.Alignment(); }).find("general.alignment 48 is not a power"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

}  // namespace
}  // namespace proctor
