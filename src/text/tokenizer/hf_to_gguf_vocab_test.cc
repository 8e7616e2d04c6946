// Hugging Face tokenizer files as a GGUF vocabulary: which GGUF tokenizer a real tokenizer.json
// becomes (Llama 3's byte-level BPE, Llama 2's SentencePiece-style BPE), and the clear errors
// for what has no GGUF form. That llama.cpp tokenizes the written files as Hugging Face does is
// src/cli/quantize_gguf_from_hf_oracle_test.cc.
#include "text/tokenizer/hf_to_gguf_vocab.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "formats/gguf_writer.h"
#include "text/tokenizer/oracle_test_support.h"
#include "util/error.h"
#include "util/file.h"
#include "util/testing_files.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using proctor::testing::TempDir;

// A checkpoint directory holding `tokenizer` as tokenizer.json (and `model`'s
// tokenizer_config.json when given).
fs::path WriteCheckpoint(const TempDir& tmp, const json& tokenizer, const std::string& model = "") {
  fs::path dir = tmp.path() / "checkpoint";
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << tokenizer.dump();
  if (!model.empty()) {
    fs::copy_file(RealTokenizerDir(model) / "tokenizer_config.json", dir / "tokenizer_config.json");
  }
  return dir;
}

json RealTokenizer(const std::string& model) {
  return json::parse(ReadFileToString(RealTokenizerDir(model) / "tokenizer.json"));
}

// The Error message of `AddHfTokenizerAsGgufVocab(dir)`, "" when it succeeds.
std::string ErrorOf(const fs::path& dir) {
  GgufMetadata metadata;
  try {
    AddHfTokenizerAsGgufVocab(dir, json::object(), 32000, metadata);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class HfToGgufVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string problem = proctor::testing::OraclesProblem({"tokenizers"});
        !problem.empty()) {
      GTEST_SKIP() << "tokenizer files unavailable: " << problem;
    }
  }
  TempDir tmp_;
};

TEST_F(HfToGgufVocab, ByteLevelBpeIsGpt2WithThePresetOfItsRegexes) {
  const json tokenizer = RealTokenizer("llama3");
  const fs::path dir = WriteCheckpoint(tmp_, tokenizer, "llama3");
  GgufMetadata metadata;
  const GgufVocabSummary summary = AddHfTokenizerAsGgufVocab(
      dir, json{{"bos_token_id", 128000}, {"eos_token_id", 128001}}, 128256, metadata);
  EXPECT_EQ(summary.model, "gpt2");
  EXPECT_EQ(summary.pre, "llama3");  // llama.cpp's preset of Llama 3's pre-tokenizer regex
  EXPECT_EQ(summary.tokens, 128256u);
  EXPECT_EQ(summary.merges, tokenizer["model"]["merges"].size());
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                          "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
                          "tokenizer.ggml.bos_token_id", "tokenizer.chat_template"}) {
    EXPECT_TRUE(metadata.Contains(key)) << key;
  }
}

TEST_F(HfToGgufVocab, SentencePieceStyleBpeIsLlamaWithScores) {
  const json tokenizer = RealTokenizer("llama2");
  const fs::path dir = WriteCheckpoint(tmp_, tokenizer, "llama2");
  GgufMetadata metadata;
  const GgufVocabSummary summary = AddHfTokenizerAsGgufVocab(dir, json::object(), 32000, metadata);
  EXPECT_EQ(summary.model, "llama");
  EXPECT_EQ(summary.pre, "default");
  EXPECT_EQ(summary.tokens, tokenizer["model"]["vocab"].size());
  EXPECT_TRUE(metadata.Contains("tokenizer.ggml.scores"));
  EXPECT_FALSE(metadata.Contains("tokenizer.ggml.merges"));
}

TEST_F(HfToGgufVocab, WhatHasNoGgufFormIsAClearError) {
  // A pre-tokenizer regex no llama.cpp preset has: the error lists it.
  json tokenizer = RealTokenizer("llama3");
  json& steps = tokenizer["pre_tokenizer"]["pretokenizers"];
  ASSERT_TRUE(steps.is_array() && steps[0]["type"] == "Split");
  steps[0]["pattern"]["Regex"] = "\\p{L}+|[^\\p{L}]";
  fs::path dir = WriteCheckpoint(tmp_, tokenizer);
  std::string error = ErrorOf(dir);
  EXPECT_NE(error.find("no llama.cpp pre-tokenizer preset"), std::string::npos) << error;
  EXPECT_NE(error.find("\\p{L}+|[^\\p{L}]"), std::string::npos) << error;
  EXPECT_NE(error.find("tokenizer.json"), std::string::npos) << error;

  // A Unigram model.
  fs::remove_all(dir);
  dir = WriteCheckpoint(tmp_, json{{"model", {{"type", "Unigram"}, {"vocab", {{"a", 0.0}}}}}});
  error = ErrorOf(dir);
  EXPECT_NE(error.find("model type \"Unigram\""), std::string::npos) << error;

  // Not JSON, and no tokenizer.json at all.
  std::ofstream(dir / "tokenizer.json") << "{\"model\": ";
  error = ErrorOf(dir);
  EXPECT_NE(error.find("tokenizer.json: not valid JSON"), std::string::npos) << error;
  fs::remove(dir / "tokenizer.json");
  error = ErrorOf(dir);
  EXPECT_NE(error.find("no tokenizer.json"), std::string::npos) << error;
}

}  // namespace
}  // namespace proctor::text
