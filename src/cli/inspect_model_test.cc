// End to end: `proctor inspect MODEL` (the built executable, PROCTOR_BIN) on an MLX-quantized
// directory written by tools/write_mlx_model.py and on a dense hf-goldens model. Expected values
// come from the formats (bits per weight of a packed matrix with f16 scales and biases, tensor
// counts of the writer's model) and from the safetensors headers read here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The safetensors header of a file: {name: {dtype, shape, data_offsets}} and its byte length.
json SafetensorsHeader(const fs::path& path, uint64_t* header_len) {
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(header_len), 8);
  std::string text(*header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return json::parse(text);
}

std::map<std::string, json> TypesByName(const json& summary) {
  std::map<std::string, json> types;
  for (const json& t : summary["types"]) types[t["type"].get<std::string>()] = t;
  return types;
}

TEST(InspectModel, MlxQuantizedDirectory) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  }
  const fs::path dir = TempPath("model");
  // The writer's random llama: hidden 128, ff 256, 4 heads / 2 kv of 32, vocab 256, 2 layers,
  // untied. 4-bit g64 with f16 scales everywhere except one 8-bit g32 module and one dense one.
  const std::string write = fmt::format(
      "/usr/bin/python3 {}/tools/write_mlx_model.py {} {} --bits 4 --group-size 64 --untied "
      "--scale-dtype f16 --override model.layers.0.mlp.down_proj=8:32 "
      "--override model.layers.1.self_attn.v_proj=false",
      PROCTOR_SOURCE_DIR, (dir / "mlx").string(), (dir / "deq").string());
  ASSERT_EQ(std::system(write.c_str()), 0) << write;
  const fs::path json_path = dir / "summary.json";
  const Result r =
      Proctor(fmt::format("inspect {} --json {}", (dir / "mlx").string(), json_path.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("affine 4-bit g64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("affine 8-bit g32"), std::string::npos) << r.out;
  const json s = ReadJson(json_path);
  EXPECT_EQ(s["architecture"], "llama");
  EXPECT_EQ(s["layers"], 2);
  EXPECT_EQ(s["hidden_size"], 128);
  EXPECT_EQ(s["vocab_size"], 256);
  // 2 layers x 7 linear + embedding + head = 16 matrices (one of them dense) + 5 norms.
  EXPECT_EQ(s["tensors"], 21);
  EXPECT_EQ(s["file_tensors"], 15 * 3 + 6);  // quantized: weight + scales + biases
  const auto types = TypesByName(s);
  ASSERT_EQ(types.size(), 3u) << s.dump(1);
  EXPECT_EQ(types.at("affine 4-bit g64")["tensors"], 14);
  EXPECT_EQ(types.at("affine 8-bit g32")["tensors"], 1);
  EXPECT_EQ(types.at("f32")["tensors"], 6);
  // bits per weight: codes + (16-bit scale + 16-bit bias) per group.
  EXPECT_DOUBLE_EQ(types.at("affine 4-bit g64")["bits_per_weight"].get<double>(), 4 + 32.0 / 64);
  EXPECT_DOUBLE_EQ(types.at("affine 8-bit g32")["bits_per_weight"].get<double>(), 8 + 32.0 / 32);
  EXPECT_DOUBLE_EQ(types.at("f32")["bits_per_weight"].get<double>(), 32.0);
  const int64_t per_layer = 128 * 128 * 2 + 64 * 128 * 2 + 256 * 128 * 3 + 128 * 2;
  const int64_t parameters = 256 * 128 * 2 + 128 + 2 * per_layer;
  EXPECT_EQ(s["parameters"], parameters);
  EXPECT_EQ(s["f32_bytes"], parameters * 4);
  // On disk: the one safetensors file; its data section (after the header) is the weights.
  const fs::path file = dir / "mlx" / "model.safetensors";
  uint64_t header_len = 0;
  SafetensorsHeader(file, &header_len);
  EXPECT_EQ(s["disk_bytes"], fs::file_size(file));
  EXPECT_EQ(s["weight_bytes"], fs::file_size(file) - 8 - header_len);
  EXPECT_DOUBLE_EQ(s["bits_per_weight"].get<double>(),
                   8.0 * (fs::file_size(file) - 8 - header_len) / parameters);
  fs::remove_all(dir);
}

TEST(InspectModel, DenseHuggingFaceDirectory) {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  const fs::path fixtures = env && *env ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
  const fs::path dir = fixtures / "hf-goldens" / "llama-bf16-tied-rope-llama3";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  const fs::path json_path = TempPath("summary.json");
  const Result r = Proctor(fmt::format("inspect {} --json {}", dir.string(), json_path.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const json s = ReadJson(json_path);
  fs::remove(json_path);
  uint64_t header_len = 0;
  const json header = SafetensorsHeader(dir / "model.safetensors", &header_len);
  std::map<std::string, int> expected;  // lower-case dtype -> tensors
  int tensors = 0;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") continue;
    std::string dtype = spec["dtype"].get<std::string>();
    for (char& ch : dtype) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    ++expected[dtype];
    ++tensors;
  }
  EXPECT_EQ(s["tensors"], tensors);
  EXPECT_EQ(s["file_tensors"], tensors);
  const auto types = TypesByName(s);
  ASSERT_EQ(types.size(), expected.size()) << s.dump(1);
  for (const auto& [dtype, count] : expected) {
    EXPECT_EQ(types.at(dtype)["tensors"], count) << dtype;
    if (dtype == "bf16") {
      EXPECT_DOUBLE_EQ(types.at(dtype)["bits_per_weight"].get<double>(), 16.0);
    }
  }
  EXPECT_TRUE(s["tie_word_embeddings"].get<bool>());
  EXPECT_EQ(s["disk_bytes"], fs::file_size(dir / "model.safetensors"));
  EXPECT_NE(r.out.find("bf16"), std::string::npos) << r.out;
}

// stories260K.gguf stores its tied LM head a second time (output.weight, byte-identical to
// token_embd.weight). inspect and quantize count its parameters alike, once, as the architecture
// gives them: embedding 512 x 64, final norm, and per layer q/o 64 x 64, k/v 32 x 64, gate / up /
// down 64 x 172 and two norms.
TEST(InspectModel, InspectAndQuantizeCountATiedHeadsStoredCopyOnce) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const int64_t expected = 512 * 64 + 64 + 5 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 64 * 172 + 2 * 64);
  const fs::path dir = TempPath("stories");
  fs::create_directories(dir);
  Result r = Proctor(fmt::format("inspect {} --json {}", gguf.string(), (dir / "i.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  const json inspect = ReadJson(dir / "i.json");
  EXPECT_EQ(inspect["parameters"], expected);
  EXPECT_EQ(inspect["non_parameters"], json::array({"lm_head.weight"}));
  EXPECT_EQ(inspect["non_parameter_bytes"], 512 * 64 * 4);
  EXPECT_NE(r.out.find("also stored      lm_head.weight"), std::string::npos) << r.out;
  r = Proctor(fmt::format("quantize {} --out {} --bits 8 --json {}", gguf.string(),
                          (dir / "q").string(), (dir / "q.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadJson(dir / "q.json")["total_parameters"], expected);
  r = Proctor(
      fmt::format("inspect {} --json {}", (dir / "q").string(), (dir / "iq.json").string()));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(ReadJson(dir / "iq.json")["parameters"], expected);
  fs::remove_all(dir);
}

TEST(InspectModel, NotAModel) {
  const Result r = Proctor("inspect /nonexistent/model-dir");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("/nonexistent/model-dir"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace proctor::cli_test
