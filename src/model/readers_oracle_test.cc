// The safetensors and GGUF readers against files written by an independent Python writer
// (tools/write_model_files.py: struct + numpy per the published formats, no gguf/safetensors
// package). The writer's manifest says what each file holds; the readers must agree byte for byte.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "formats/gguf.h"
#include "formats/gguf_model.h"
#include "formats/safetensors.h"
#include "model/load.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using proctor::testing::TempDir;

std::string Hex(const uint8_t* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 15];
  }
  return out;
}

void ExpectValues(DType type, const uint8_t* data, const json& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(FloatElement(type, data, i), values[i].get<double>()) << "element " << i;
  }
}

class ReadersOracle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
      skip_reason_ = "/usr/bin/python3 with numpy is not available";
      return;
    }
    dir_ = new TempDir();
    const std::string command = fmt::format("/usr/bin/python3 {}/tools/write_model_files.py {}",
                                            PROCTOR_SOURCE_DIR, dir_->path().string());
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    manifest_ = json::parse(ReadFileToString(dir_->path() / "manifest.json"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }
  static fs::path Path(const std::string& name) { return dir_->path() / name; }

  static inline TempDir* dir_ = nullptr;
  static inline json manifest_;
  static inline std::string skip_reason_;
};

TEST_F(ReadersOracle, SafetensorsUnalignedAllDtypes) {
  const json& expected = manifest_["safetensors"]["unaligned.safetensors"];
  WeightStore store("test");
  LoadSafetensorsInto(Path("unaligned.safetensors"), store);
  EXPECT_EQ(store.size(), expected["tensors"].size());
  bool saw_unaligned_f32 = false;
  for (const json& t : expected["tensors"]) {
    const std::string name = t["name"];
    SCOPED_TRACE(name);
    const TensorInfo& info = store.Get(name);
    EXPECT_EQ(Name(info.type), t["dtype"].get<std::string>());
    EXPECT_EQ(info.shape, t["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(Hex(info.data, info.bytes), t["hex"].get<std::string>());
    if (t.contains("values")) ExpectValues(info.type, info.data, t["values"]);
    if (info.type == DType::kF32 && info.bytes > 0 &&
        reinterpret_cast<uintptr_t>(info.data) % 4 != 0) {
      saw_unaligned_f32 = true;
    }
  }
  EXPECT_TRUE(saw_unaligned_f32) << "the writer should have produced an unaligned f32 tensor";
  const MappedFile mapped(Path("unaligned.safetensors"));
  const SafetensorsHeader header = ParseSafetensors(mapped.bytes(), "unaligned.safetensors");
  EXPECT_EQ(header.metadata, (expected["metadata"].get<std::map<std::string, std::string>>()));
}

TEST_F(ReadersOracle, SafetensorsShardedIndex) {
  WeightStore store("test");
  LoadSafetensorsDirectory(Path("sharded"), store);
  const json& expected = manifest_["sharded"]["tensors"];
  EXPECT_EQ(store.size(), expected.size());
  for (const json& t : expected) {
    const std::string name = t["name"];
    SCOPED_TRACE(name);
    const TensorInfo& info = store.Get(name);
    EXPECT_EQ(fs::path(info.file).filename(), t["file"].get<std::string>());
    EXPECT_EQ(info.shape, t["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(Hex(info.data, info.bytes), t["hex"].get<std::string>());
    if (t.contains("values")) ExpectValues(info.type, info.data, t["values"]);
  }
}

// Compares one metadata value with the manifest's {type, value}.
void ExpectGgufValue(const GgufValue& value, const json& type, const json& expected) {
  if (type.is_object()) {  // {"array": element type}
    ASSERT_TRUE(value.is_array());
    const json& element = type["array"];
    ASSERT_EQ(value.size(), expected.size());
    if (element.is_object()) {
      const auto arrays = value.Arrays();
      for (size_t i = 0; i < arrays.size(); ++i) ExpectGgufValue(arrays[i], element, expected[i]);
      return;
    }
    const std::string name = element;
    EXPECT_EQ(GgufTypeName(value.array_type()), name);
    if (name == "string") {
      const auto strings = value.Strings();
      for (size_t i = 0; i < strings.size(); ++i)
        EXPECT_EQ(strings[i], expected[i].get<std::string>());
    } else if (name == "float32" || name == "float64") {
      const std::vector<float> floats = value.Floats();
      for (size_t i = 0; i < floats.size(); ++i) {
        EXPECT_EQ(floats[i], static_cast<float>(expected[i].get<double>()));
      }
      if (name == "float64") {  // exact doubles through the raw view
        for (size_t i = 0; i < expected.size(); ++i) {
          double d;
          std::memcpy(&d, value.RawElements().data() + 8 * i, 8);
          EXPECT_EQ(d, expected[i].get<double>());
        }
      }
    } else if (name == "uint64") {
      for (size_t i = 0; i < expected.size(); ++i) {
        uint64_t u;
        std::memcpy(&u, value.RawElements().data() + 8 * i, 8);
        EXPECT_EQ(u, expected[i].get<uint64_t>());
      }
    } else {
      const std::vector<int64_t> ints = value.Ints();
      for (size_t i = 0; i < ints.size(); ++i) {
        EXPECT_EQ(ints[i],
                  name == "bool" ? (expected[i].get<bool>() ? 1 : 0) : expected[i].get<int64_t>());
      }
    }
    return;
  }
  const std::string name = type;
  EXPECT_EQ(GgufTypeName(value.type()), name);
  if (name == "string") {
    EXPECT_EQ(value.AsString(), expected.get<std::string>());
  } else if (name == "bool") {
    EXPECT_EQ(value.AsBool(), expected.get<bool>());
  } else if (name == "float32" || name == "float64") {
    EXPECT_EQ(value.AsDouble(), expected.get<double>());
  } else if (name == "uint64") {
    EXPECT_EQ(value.AsUint(), expected.get<uint64_t>());
  } else {
    EXPECT_EQ(value.AsInt(), expected.get<int64_t>());
  }
}

TEST_F(ReadersOracle, GgufAllVersionsAlignmentsAndValueTypes) {
  for (const auto& [file_name, expected] : manifest_["gguf"].items()) {
    SCOPED_TRACE(file_name);
    const auto gguf = GgufFile::Open(Path(file_name));
    EXPECT_EQ(gguf->version(), expected["version"].get<uint32_t>());
    EXPECT_EQ(gguf->alignment(), expected["alignment"].get<uint64_t>());
    EXPECT_EQ(gguf->data_offset() % gguf->alignment(), 0u);
    const json& metadata = expected["metadata"];
    ASSERT_EQ(gguf->metadata().size(), metadata.size());
    for (size_t i = 0; i < metadata.size(); ++i) {
      const std::string key = metadata[i]["key"];
      SCOPED_TRACE(key);
      EXPECT_EQ(gguf->metadata()[i].first, key);  // file order kept
      const GgufValue* value = gguf->Find(key);
      ASSERT_NE(value, nullptr);
      ExpectGgufValue(*value, metadata[i]["type"], metadata[i]["value"]);
    }
    ASSERT_EQ(gguf->tensors().size(), expected["tensors"].size());
    for (const json& t : expected["tensors"]) {
      const std::string name = t["name"];
      SCOPED_TRACE(name);
      const GgufTensorInfo* info = gguf->FindTensor(name);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(Name(info->type), t["dtype"].get<std::string>());
      EXPECT_EQ(info->dims, t["dims"].get<std::vector<uint64_t>>());
      EXPECT_EQ(Hex(info->data, info->bytes), t["hex"].get<std::string>());
      if (t.contains("values")) ExpectValues(info->type, info->data, t["values"]);
    }
  }
}

TEST_F(ReadersOracle, GgufTypedGetters) {
  const auto gguf = GgufFile::Open(Path("v3_align64.gguf"));
  EXPECT_EQ(gguf->GetString("general.architecture"), "llama");
  EXPECT_EQ(gguf->GetInt("test.i8"), -7);
  EXPECT_EQ(gguf->GetUint("test.u32"), 4000000000u);
  EXPECT_EQ(gguf->GetInt("test.u32"), 4000000000);  // any integer type that fits
  EXPECT_FLOAT_EQ(gguf->GetFloat("test.f32"), -1.25f);
  EXPECT_FLOAT_EQ(gguf->GetFloat("test.i16"), -32000.0f);
  EXPECT_TRUE(gguf->GetBool("test.bool_true"));
  EXPECT_EQ(gguf->GetStringArray("test.arr_string").size(), 4u);
  EXPECT_EQ(gguf->GetIntArray("test.arr_i32"), (std::vector<int64_t>{1, -2, 3, -4}));
  EXPECT_EQ(gguf->GetFloatArray("test.arr_f32")[0], 0.5f);
  EXPECT_EQ(gguf->FindInt("no.such.key"), std::nullopt);
  EXPECT_ERROR_CONTAINS(gguf->GetString("test.u8"), "v3_align64.gguf", "test.u8", "uint8",
                        "string");
  EXPECT_ERROR_CONTAINS(gguf->GetInt("missing.key"), "v3_align64.gguf", "missing.key", "missing");
  EXPECT_ERROR_CONTAINS(gguf->GetUint("test.i8"), "test.i8", "negative");
  EXPECT_ERROR_CONTAINS(gguf->GetInt("test.u64"), "test.u64", "does not fit");
  EXPECT_ERROR_CONTAINS(gguf->GetStringArray("test.arr_i32"), "test.arr_i32", "int32",
                        "array of strings");
  EXPECT_ERROR_CONTAINS(gguf->GetIntArray("test.arr_f32"), "test.arr_f32", "integers");
}

TEST_F(ReadersOracle, GgufTensorsUnderHfNamesWithReversedDims) {
  const auto gguf = GgufFile::Open(Path("v3_align64.gguf"));
  WeightStore store("test");
  AddGgufTensors(gguf, store);
  const TensorInfo& embed = store.Get("model.embed_tokens.weight");
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{3, 5}));  // GGUF dims (5, 3)
  EXPECT_EQ(embed.source_name, "token_embd.weight");
  EXPECT_EQ(store.Get("model.layers.0.self_attn.q_proj.weight").type, DType::kF16);
  const MatView up = store.Matrix("model.layers.0.mlp.up_proj.weight");  // Q8_0, dims (64, 3)
  EXPECT_EQ(up.rows, 3);
  EXPECT_EQ(up.cols, 64);
  EXPECT_EQ(up.row_stride, 68u);  // two 34-byte Q8_0 blocks per row
  EXPECT_EQ(store.Get("lm_head.weight").type, DType::kQ4_K);
  EXPECT_EQ(store.Get("extra.i32").shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_ERROR_CONTAINS(store.Matrix("extra.i32"), "extra.i32", "[2, 3, 2]");
}

TEST_F(ReadersOracle, GgufModelsGiveTheirConfig) {
  ASSERT_EQ(manifest_["models"].size(), 4u);
  for (const auto& [file_name, spec] : manifest_["models"].items()) {
    SCOPED_TRACE(file_name);
    const LoadedModel m = LoadModel(Path(file_name).string());  // also validates every shape
    const ModelConfig& c = m.config;
    const std::string arch = spec["arch"];
    EXPECT_EQ(c.model_type, arch);
    EXPECT_EQ(c.hidden_size, spec["hidden"].get<int>());
    EXPECT_EQ(c.num_layers, spec["layers"].get<int>());
    EXPECT_EQ(c.num_heads, spec["heads"].get<int>());
    EXPECT_EQ(c.num_kv_heads, spec["kv_heads"].get<int>());
    EXPECT_EQ(c.head_dim, spec["head_dim"].get<int>());
    EXPECT_EQ(c.intermediate_size, spec["ff"].get<int>());
    EXPECT_EQ(c.vocab_size, spec["vocab"].get<int>());
    EXPECT_EQ(c.max_position_embeddings, spec["context"].get<int>());
    EXPECT_EQ(c.rms_norm_eps, static_cast<float>(spec["eps"].get<double>()));
    EXPECT_EQ(c.rope.theta, spec["theta"].get<double>());
    EXPECT_EQ(c.tie_word_embeddings, spec["tied"].get<bool>());
    EXPECT_EQ(c.attention_bias, spec.value("bias", false));
    EXPECT_EQ(c.qk_norm, spec.value("qk_norm", false));
    EXPECT_EQ(c.rope_adjacent_pairs, arch == "llama");  // llama.cpp permutes llama Q/K only
    EXPECT_EQ(c.bos_token_id, spec["bos"].get<int>());
    EXPECT_EQ(c.eos_token_ids, std::vector<int>{spec["eos"].get<int>()});
    EXPECT_EQ(m.weights.size(), spec["tensor_count"].get<size_t>());
    if (spec.contains("scaling")) {
      const std::string kind = spec["scaling"][0];
      EXPECT_EQ(RopeTypeName(c.rope.type), kind);
      EXPECT_EQ(c.rope.factor.value(), spec["scaling"][1].get<double>());
      if (spec["scaling"][2].get<int>() > 0) {
        EXPECT_EQ(c.rope.original_max_position_embeddings.value(), spec["scaling"][2].get<int>());
      }
    } else if (spec.contains("rope_freqs")) {  // Llama-3 divisors in rope_freqs.weight
      EXPECT_EQ(c.rope.type, RopeType::kLlama3);
      EXPECT_EQ(c.rope.factor.value(), spec["rope_freqs"].get<double>());
      EXPECT_EQ(c.rope.low_freq_factor, 1.0);
      EXPECT_EQ(c.rope.high_freq_factor, 4.0);
      EXPECT_EQ(c.rope.original_max_position_embeddings.value(), 8192);
    } else {
      EXPECT_EQ(c.rope.type, RopeType::kDefault);
    }
  }
}

TEST_F(ReadersOracle, GgufUnknownRopeFactorsAreRefused) {
  // Scale one divisor of tiny_llama3's rope_freqs.weight (the last tensor, at the file's end).
  std::string bytes = ReadFileToString(Path("tiny_llama3.gguf"));
  float last;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  last *= 1.5f;
  std::memcpy(bytes.data() + bytes.size() - 4, &last, 4);
  const fs::path bad = Path("bad_rope.gguf");
  WriteFileAtomic(bad, bytes);
  EXPECT_ERROR_CONTAINS(LoadModel(bad.string()), "rope_freqs.weight[", "does not match Llama-3",
                        "not supported");
}

TEST_F(ReadersOracle, GgufModelWithWrongShapeIsRefused) {
  // Rewrite tiny_llama's ffn_down dims (24, 16) -> (16, 24) in place: same bytes, wrong shape.
  std::string bytes = ReadFileToString(Path("tiny_llama.gguf"));
  const std::string name = "blk.1.ffn_down.weight";
  const size_t at = bytes.find(name);
  ASSERT_NE(at, std::string::npos);
  const size_t dims = at + name.size() + 4;  // past the name and n_dims
  const uint64_t d0 = 16, d1 = 24;
  std::memcpy(bytes.data() + dims, &d0, 8);
  std::memcpy(bytes.data() + dims + 8, &d1, 8);
  const fs::path bad = Path("bad_shape.gguf");
  WriteFileAtomic(bad, bytes);
  const std::string bad_text = bad.string();
  EXPECT_ERROR_CONTAINS(LoadModel(bad_text), bad_text.c_str(),
                        "model.layers.1.mlp.down_proj.weight", "[24, 16]", "[16, 24]");
}

}  // namespace
}  // namespace proctor
