// safetensors writer: the exact header bytes of a small file worked by hand (sorted keys, space
// padding to a multiple of 8, __metadata__), the tensors read back by proctor's reader and by
// an independent numpy reader, and errors for inconsistent input (no file left behind).
#include "formats/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "formats/safetensors.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

TEST(SafetensorsWriter, HeaderWorkedByHand) {
  // Keys in byte order ("__metadata__" < "a" < "b"), fields in byte order too; the JSON is
  // 141 bytes, padded with 3 spaces to 144 (8 + 144 = 152 = 19 * 8).
  const std::string json =
      R"({"__metadata__":{"format":"mlx"},"a":{"data_offsets":[0,3],"dtype":"U8","shape":[3]},)"
      R"("b":{"data_offsets":[3,11],"dtype":"F32","shape":[2,1]}})";
  std::string padded = json;
  padded.append((8 - padded.size() % 8) % 8, ' ');
  std::string expected(8, '\0');
  expected[0] = static_cast<char>(padded.size());
  expected += padded;
  EXPECT_EQ(SafetensorsHeaderBytes({{"b", DType::kF32, {2, 1}}, {"a", DType::kU8, {3}}},
                                   {{"format", "mlx"}}),
            expected);
  EXPECT_EQ((8 + padded.size()) % 8, 0u);
  EXPECT_EQ(json.size(), 141u);
  EXPECT_EQ(padded.size(), 144u);
}

TEST(SafetensorsWriter, StreamsTensorsThatBothReadersReadBack) {
  TempDir tmp;
  const fs::path path = tmp.path() / "t.safetensors";
  const std::vector<float> f = {1.5f, -2.0f, 3.25f};
  const std::vector<uint16_t> h = {0x3C00, 0xBC00};  // f16 1, -1
  const std::vector<uint32_t> u = {0xDEADBEEFu, 7u, 0u, 1u};
  const uint64_t size = WriteSafetensors(
      path,
      {{"z.f32", DType::kF32, {3}},
       {"a.f16", DType::kF16, {2}},
       {"m.u32", DType::kU32, {2, 2}},
       {"empty", DType::kF32, {0}}},
      {{"format", "mlx"}}, [&](const SafetensorsTensorSpec& spec, const TensorByteSink& sink) {
        auto bytes = [](const auto& v) {
          return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                          v.size() * sizeof(v[0]));
        };
        if (spec.name == "z.f32") sink(bytes(f));
        if (spec.name == "a.f16") sink(bytes(h));
        if (spec.name == "m.u32") {  // in two pieces
          sink(bytes(u).first(6));
          sink(bytes(u).subspan(6));
        }
      });
  EXPECT_EQ(size, fs::file_size(path));
  const std::string file = ReadFileToString(path);
  const SafetensorsHeader parsed = ParseSafetensors(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(file.data()), file.size()),
      path.string());
  ASSERT_EQ(parsed.tensors.size(), 4u);
  EXPECT_EQ(parsed.metadata.at("format"), "mlx");
  for (const TensorInfo& t : parsed.tensors) {
    if (t.name == "z.f32") {
      // Bit patterns on purpose: the same bits, not equal values.
      // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
      EXPECT_EQ(std::memcmp(t.data, f.data(), 12), 0);
    }
    if (t.name == "a.f16") {
      EXPECT_EQ(std::memcmp(t.data, h.data(), 4), 0);
    }
    if (t.name == "m.u32") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 2}));
      EXPECT_EQ(std::memcmp(t.data, u.data(), 16), 0);
    }
  }
  // Independent reader: numpy parses the framing and checks the layout rules.
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 unavailable";
  const std::string script = R"(
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], 'rb').read()
(n,) = struct.unpack('<Q', raw[:8])
text = raw[8:8 + n].decode()
assert (8 + n) % 8 == 0 and text.rstrip(' ').endswith('}'), text
pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
keys = [k for k, _ in pairs]
assert keys == sorted(keys), keys
h = dict((k, dict(v) if k != '__metadata__' else dict(v)) for k, v in pairs)
data = raw[8 + n:]
def arr(name, dt):
    b, e = dict(h[name])['data_offsets']
    return np.frombuffer(data[b:e], dtype=dt)
assert dict(h['__metadata__']) == {'format': 'mlx'}
assert arr('z.f32', '<f4').tolist() == [1.5, -2.0, 3.25]
assert arr('a.f16', '<f2').tolist() == [1.0, -1.0]
assert arr('m.u32', '<u4').tolist() == [0xDEADBEEF, 7, 0, 1]
assert arr('empty', '<f4').size == 0
offsets = [dict(h[k])['data_offsets'] for k in keys if k != '__metadata__']
assert all(offsets[i][1] == offsets[i + 1][0] for i in range(len(offsets) - 1)) and offsets[0][0] == 0
assert offsets[-1][1] == len(data)
print('ok')
)";
  WriteFileAtomic(tmp.path() / "check.py", script);
  const std::string command =
      "/usr/bin/python3 " + (tmp.path() / "check.py").string() + " " + path.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[4096];
  std::string out;
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  if (out.find("No module named 'numpy'") != std::string::npos) GTEST_SKIP() << "no numpy";
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "ok\n");
}

TEST(SafetensorsWriter, WrongByteCountIsAnErrorAndLeavesNoFile) {
  TempDir tmp;
  const fs::path path = tmp.path() / "bad.safetensors";
  const std::vector<uint8_t> five(5, 1);
  EXPECT_ERROR_CONTAINS(WriteSafetensors(path, {{"x", DType::kF32, {1}}}, {},
                                         [&](const SafetensorsTensorSpec&,
                                             const TensorByteSink& sink) { sink(five); }),
                        "\"x\"", "produced 5 bytes, expected 4");
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  EXPECT_ERROR_CONTAINS(
      SafetensorsHeaderBytes({{"x", DType::kF32, {1}}, {"x", DType::kF32, {1}}}, {}),
      "listed twice");
  EXPECT_ERROR_CONTAINS(SafetensorsHeaderBytes({{"x", DType::kQ4_0, {32}}}, {}), "q4_0");
}

}  // namespace
}  // namespace proctor
