// Malformed safetensors and GGUF files: each gives an Error naming the file, never a crash, a
// silent clamp or a huge allocation.
#include <gtest/gtest.h>

#include <cstring>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/safetensors.h"
#include "formats/testing_gguf_builder.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using Bytes = std::vector<uint8_t>;

// ---- safetensors ----

Bytes Safetensors(const std::string& header, size_t data_bytes) {
  std::string text(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(text.data(), &n, 8);
  text += header;
  text.append(data_bytes, '\x11');
  return Bytes(text.begin(), text.end());
}

void ExpectSafetensorsError(const Bytes& bytes, std::initializer_list<const char*> parts) {
  try {
    ParseSafetensors(bytes, "bad.safetensors");
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bad.safetensors"), std::string::npos) << message;
    for (const char* part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << message << "\nmissing: " << part;
    }
  }
}

TEST(MalformedSafetensors, GoodFileParses) {
  const auto header = ParseSafetensors(
      Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "ok");
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_EQ(header.tensors[0].bytes, 8u);
}

// MLX's mx.save_safetensors writes "__metadata__": null when given no metadata (the safetensors
// reference reads it as "none"); a string-valued object is the other legal form.
TEST(MalformedSafetensors, NullMetadataIsNoMetadata) {
  const auto header = ParseSafetensors(
      Safetensors(R"({"__metadata__":null,"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                  8),
      "mlx.safetensors");
  ASSERT_EQ(header.tensors.size(), 1u);
  EXPECT_TRUE(header.metadata.empty());
  ExpectSafetensorsError(Safetensors(R"({"__metadata__":[]})", 0), {"__metadata__"});
}

TEST(MalformedSafetensors, Errors) {
  ExpectSafetensorsError(Bytes{1, 2, 3}, {"too short"});
  Bytes past = Safetensors("{}", 0);
  past[0] = 200;  // header length 200 > file
  ExpectSafetensorsError(past, {"header length 200", "past the end"});
  Bytes huge = Safetensors("{}", 0);
  std::memset(huge.data(), 0xFF, 8);  // 2^64 - 1
  ExpectSafetensorsError(huge, {"header length 18446744073709551615"});
  ExpectSafetensorsError(Safetensors("{not json", 0), {"not valid JSON"});
  ExpectSafetensorsError(Safetensors("[1,2]", 0), {"JSON object"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8),
      {"\"a\"", "[0, 16]", "outside the data section"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
      {"\"a\"", "does not match", "8 bytes"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
      {"outside the data section"});
  ExpectSafetensorsError(Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
                      "b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                                     8),
                         {"overlap", "\"a\"", "\"b\""});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2),
      {"F8_E4M3", "not supported"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],
                      "data_offsets":[0,8]}})",
                  8),
      {"\"a\"", "more elements than the file has bytes"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
      {"non-negative integer"});
  ExpectSafetensorsError(Safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", 8), {"data_offsets"});
  ExpectSafetensorsError(Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
                         {"[begin, end]"});
  ExpectSafetensorsError(Safetensors(R"({"__metadata__":{"k":1}})", 0), {"__metadata__"});
  // #18 class 12: the tensors must tile the data section, as the safetensors library requires.
  ExpectSafetensorsError(Safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                      "b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                     12),
                         {"tensor \"b\" starts at byte 8", "end at 4", "has a hole"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
      {"tensor \"a\" starts at byte 4", "end at 0"});
  ExpectSafetensorsError(
      Safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12),
      {"the tensors end at byte 4", "it holds 12 bytes"});
}

TEST(MalformedSafetensors, FileErrorsNameThePath) {
  testing::TempDir dir;
  const auto path = dir.path() / "trunc.safetensors";
  const Bytes bytes = Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4);
  WriteFileAtomic(path,
                  std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  WeightStore store("x");
  const std::string path_text = path.string();
  EXPECT_ERROR_CONTAINS(LoadSafetensorsInto(path, store), path_text.c_str(), "\"a\"");
}

// ---- GGUF ----

using testing::GgufBuilder;

// A valid file: one uint32 key, two F32 tensors of 4 values.
Bytes GoodGguf() {
  GgufBuilder b(3, 2, 1);
  b.Str("general.architecture").U32(8).Str("llama");
  b.Str("t0").U32(1).U64(4).U32(0).U64(0);
  b.Str("t1").U32(1).U64(4).U32(0).U64(32);
  b.Pad(32).Zeros(48);  // t1 ends exactly at the end of the file
  return b.bytes();
}

void ExpectGgufError(const Bytes& bytes, std::initializer_list<const char*> parts) {
  try {
    GgufFile::Parse(bytes, "bad.gguf");
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bad.gguf"), std::string::npos) << message;
    for (const char* part : parts) {
      EXPECT_NE(message.find(part), std::string::npos) << message << "\nmissing: " << part;
    }
  }
}

TEST(MalformedGguf, GoodFileParses) {
  const Bytes bytes = GoodGguf();
  const auto gguf = GgufFile::Parse(bytes, "good.gguf");
  ASSERT_EQ(gguf->tensors().size(), 2u);
  EXPECT_EQ(gguf->tensors()[1].data - bytes.data(),
            static_cast<ptrdiff_t>(gguf->data_offset() + 32));
}

// The architecture names GGUF files may carry come from the family-traits table; Mistral has
// none of its own (llama.cpp converts it as "llama").
TEST(MalformedGguf, UnknownArchitectureListsTheSupportedOnes) {
  GgufBuilder b(3, 0, 1);
  b.Str("general.architecture").U32(8).Str("mistral");
  const Bytes bytes = b.bytes();
  const auto gguf = GgufFile::Parse(bytes, "mistral.gguf");
  EXPECT_ERROR_CONTAINS(
      ConfigFromGguf(*gguf, WeightStore()), "[gguf]", "mistral.gguf",
      "\"mistral\" is not supported",
      "(supported: llama, qwen2, qwen3, gemma2, gemma3, qwen35, qwen3next, qwen3moe, phi3)");
}

TEST(MalformedGguf, EveryTruncationIsAnError) {
  const Bytes good = GoodGguf();
  for (size_t n = 0; n < good.size(); ++n) {
    const Bytes cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    SCOPED_TRACE(n);
    EXPECT_THROW(GgufFile::Parse(cut, "cut.gguf"), Error);
  }
}

TEST(MalformedGguf, HeaderErrors) {
  Bytes bad_magic = GoodGguf();
  bad_magic[0] = 'X';
  ExpectGgufError(bad_magic, {"not a GGUF file"});
  ExpectGgufError(GgufBuilder(1, 0, 0).bytes(), {"version 1", "not supported"});
  ExpectGgufError(GgufBuilder(4, 0, 0).bytes(), {"version 4"});
  ExpectGgufError(GgufBuilder(0x03000000, 0, 0).bytes(), {"big-endian"});
  ExpectGgufError(GgufBuilder(3, 0, uint64_t{1} << 60).bytes(), {"metadata count"});
  ExpectGgufError(GgufBuilder(3, uint64_t{1} << 60, 0).bytes(), {"tensor count"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("k").U32(8).U64(1000).Zeros(8).bytes(),
                  {"length 1000", "past the end"});
  ExpectGgufError(GgufBuilder(3, 0, 1).U64(~uint64_t{0}).Zeros(8).bytes(), {"past the end"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("k").U32(13).Zeros(8).bytes(), {"\"k\"", "type 13"});
  ExpectGgufError(GgufBuilder(3, 0, 2).Str("k").U32(4).U32(1).Str("k").U32(4).U32(2).bytes(),
                  {"\"k\"", "twice"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("b").U32(7).Raw("\x05", 1).Zeros(8).bytes(),
                  {"\"b\"", "bool"});
}

TEST(MalformedGguf, ArrayErrors) {
  // 2^61 uint64 elements: would be 16 EiB.
  ExpectGgufError(
      GgufBuilder(3, 0, 1).Str("a").U32(9).U32(10).U64(uint64_t{1} << 61).Zeros(16).bytes(),
      {"\"a\"", "array of 2305843009213693952 uint64"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("a").U32(9).U32(8).U64(1000000).Zeros(64).bytes(),
                  {"\"a\"", "1000000 string"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("a").U32(9).U32(99).U64(1).Zeros(8).bytes(),
                  {"\"a\"", "unknown type 99"});
  GgufBuilder deep(3, 0, 1);
  deep.Str("deep").U32(9);
  for (int i = 0; i < 20; ++i) deep.U32(9).U64(1);
  deep.Zeros(64);
  ExpectGgufError(deep.bytes(), {"\"deep\"", "nests arrays"});
  ExpectGgufError(GgufBuilder(3, 0, 1).Str("s").U32(9).U32(8).U64(2).Str("ok").U64(99).bytes(),
                  {"string 1 of \"s\"", "past the end"});
}

TEST(MalformedGguf, TensorErrors) {
  auto one_tensor = [](uint32_t n_dims, const std::vector<uint64_t>& dims, uint32_t type,
                       uint64_t offset, size_t data) {
    GgufBuilder b(3, 1, 0);
    b.Str("w").U32(n_dims);
    for (uint64_t d : dims) b.U64(d);
    b.U32(type).U64(offset);
    b.Pad(32).Zeros(data);
    return b.bytes();
  };
  ExpectGgufError(one_tensor(1, {4}, 0, 0, 8), {"\"w\"", "past the end of the data section"});
  ExpectGgufError(one_tensor(1, {4}, 0, 64, 32), {"\"w\"", "past the end"});
  ExpectGgufError(one_tensor(1, {4}, 0, 3, 32), {"\"w\"", "offset 3", "alignment 32"});
  ExpectGgufError(one_tensor(1, {4}, 16, 0, 32), {"\"w\"", "IQ2_XXS", "cannot read"});
  ExpectGgufError(one_tensor(1, {4}, 1234, 0, 32), {"\"w\"", "type 1234"});
  ExpectGgufError(one_tensor(1, {33}, 8, 0, 64), {"\"w\"", "not whole", "Q8_0"});
  ExpectGgufError(one_tensor(2, {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0, 32),
                  {"\"w\"", "larger than the file"});
  ExpectGgufError(one_tensor(99, {}, 0, 0, 32), {"\"w\"", "99 dimensions"});
  // Overlapping tensors.
  GgufBuilder b(3, 2, 0);
  b.Str("a").U32(1).U64(16).U32(0).U64(0);
  b.Str("b").U32(1).U64(8).U32(0).U64(32);
  b.Pad(32).Zeros(128);
  ExpectGgufError(b.bytes(), {"\"a\"", "\"b\"", "overlap"});
  // A bad alignment value.
  GgufBuilder align(3, 0, 1);
  align.Str("general.alignment").U32(4).U32(24);
  ExpectGgufError(align.bytes(), {"general.alignment 24", "power of two"});
}

TEST(MalformedGguf, OpenNamesThePath) {
  testing::TempDir dir;
  const auto path = dir.path() / "v1.gguf";
  const Bytes bytes = GgufBuilder(1, 0, 0).bytes();
  WriteFileAtomic(path,
                  std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  const std::string path_text = path.string();
  EXPECT_ERROR_CONTAINS(GgufFile::Open(path), path_text.c_str(), "version 1");
}

}  // namespace
}  // namespace proctor
