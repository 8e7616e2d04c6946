// The byte-level BPE trainer: merges worked out by hand on a tiny text, the tokenizer.json it
// writes loads and round-trips, and Hugging Face's own `tokenizers` (PyPI 0.23.2, when
// installed) encodes and decodes the project's docs with it exactly as proctor does.
#include "text/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "text/tokenizer/oracle_test_support.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::unique_ptr<Tokenizer> Load(const ByteLevelBpe& bpe) {
  return LoadHfTokenizer(ByteLevelBpeTokenizerJson(bpe), ByteLevelBpeTokenizerConfigJson(bpe),
                         "trained");
}

TEST(BpeTrainer, MergesWorkedOutByHand) {
  // Pieces: "abab", "Ġabab", "Ġabc" (Ġ = the byte-level space). Pair counts: ab 5, ba 2, Ġa 2,
  // bc 1 -> merge a+b. Then (ab, ab) 2 and (Ġ, ab) 2 tie: ids Ġ = 2 + 32 = 34 < ab = 258, so
  // Ġ+ab wins. Every remaining pair occurs once: training stops at 260 tokens.
  const ByteLevelBpe bpe = TrainByteLevelBpe("abab abab abc", {.vocab_size = 512});
  ASSERT_EQ(bpe.merges.size(), 2u);
  EXPECT_EQ(bpe.merges[0], std::make_pair(std::string("a"), std::string("b")));
  EXPECT_EQ(bpe.merges[1], std::make_pair(std::string("\u0120"), std::string("ab")));
  ASSERT_EQ(bpe.tokens.size(), 260u);
  EXPECT_EQ(bpe.tokens[0], "<s>");
  EXPECT_EQ(bpe.tokens[1], "</s>");
  EXPECT_EQ(bpe.tokens[2 + 'a'], "a");
  EXPECT_EQ(bpe.tokens[2 + ' '], "\u0120");
  EXPECT_EQ(bpe.tokens[258], "ab");
  EXPECT_EQ(bpe.tokens[259], "\u0120ab");
  const auto tokenizer = Load(bpe);
  EXPECT_EQ(tokenizer->Encode("abab abc", false), (std::vector<int32_t>{258, 258, 259, 2 + 'c'}));
  EXPECT_EQ(tokenizer->Encode("abab abc", true), (std::vector<int32_t>{0, 258, 258, 259, 2 + 'c'}));
  EXPECT_EQ(tokenizer->BosId(), 0);
  EXPECT_EQ(tokenizer->EosId(), 1);
}

TEST(BpeTrainer, VocabularyLimitAndErrors) {
  const ByteLevelBpe bpe = TrainByteLevelBpe("aaaa bbbb aaaa bbbb cccc", {.vocab_size = 259});
  EXPECT_EQ(bpe.tokens.size(), 259u);  // one merge fits
  EXPECT_EQ(bpe.merges.size(), 1u);
  EXPECT_THROW(TrainByteLevelBpe("abc", {.vocab_size = 257}), Error);  // 2 specials + 256 bytes
  EXPECT_THROW(TrainByteLevelBpe("a\xff", {}), Error);                 // not UTF-8
}

std::string DocsText() {
  std::string text;
  for (const auto& entry : fs::directory_iterator(fs::path(PROCTOR_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") text += ReadFileToString(entry.path());
  }
  return text;
}

TEST(BpeTrainer, TrainedOnTheDocsFillsTheVocabularyAndRoundTrips) {
  const std::string docs = DocsText();
  const ByteLevelBpe bpe = TrainByteLevelBpe(docs, {.vocab_size = 512});
  ASSERT_EQ(bpe.tokens.size(), 512u);
  EXPECT_EQ(std::set<std::string>(bpe.tokens.begin(), bpe.tokens.end()).size(), 512u);
  const auto tokenizer = Load(bpe);
  const std::vector<int32_t> ids = tokenizer->Encode(docs, false);
  EXPECT_EQ(tokenizer->Decode(ids, false), docs);
  EXPECT_LT(ids.size(), docs.size() * 2 / 3);  // merges compress (~2 bytes per token)
  // Deterministic: the same text trains the same vocabulary.
  EXPECT_EQ(ByteLevelBpeTokenizerJson(TrainByteLevelBpe(docs, {.vocab_size = 512})),
            ByteLevelBpeTokenizerJson(bpe));
}

// Hugging Face tokenizers (the oracle Python of tools/oracle/setup.sh) as the oracle; skips
// without it.
TEST(BpeTrainer, HuggingFaceTokenizersAgree) {
  const auto& python = proctor::testing::Oracles("python");
  if (!python.problem.empty()) GTEST_SKIP() << "oracle unavailable: " << python.problem;
  const std::string docs = DocsText();
  const ByteLevelBpe bpe = TrainByteLevelBpe(docs, {.vocab_size = 512});
  const fs::path dir = OracleRunsDir() / "bpe-trainer";
  fs::create_directories(dir);
  WriteFileAtomic(dir / "tokenizer.json", ByteLevelBpeTokenizerJson(bpe));
  std::vector<std::string> inputs;
  size_t start = 0;
  while (start < docs.size()) {  // one input per paragraph
    size_t end = docs.find("\n\n", start);
    if (end == std::string::npos) end = docs.size();
    inputs.push_back(docs.substr(start, end - start + 1));
    start = end + 2;
  }
  inputs.push_back("<s>hello</s> world \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x98\x80 123");
  WriteFileAtomic(dir / "inputs.json", json(inputs).dump());
  std::string cmd;
  ASSERT_EQ(RunHfTokenize(dir / "tokenizer.json", dir / "inputs.json", dir / "oracle.json", &cmd),
            0)
      << cmd;
  const json out = json::parse(ReadFileToString(dir / "oracle.json"));
  const auto tokenizer = Load(bpe);
  ASSERT_EQ(out["cases"].size(), inputs.size());
  int bad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& c = out["cases"][i];
    const bool ok =
        tokenizer->Encode(inputs[i], false) == c["ids"].get<std::vector<int32_t>>() &&
        tokenizer->Encode(inputs[i], true) == c["ids_special"].get<std::vector<int32_t>>() &&
        tokenizer->Decode(c["ids"].get<std::vector<int32_t>>(), false) ==
            c["decoded"].get<std::string>();
    if (!ok && ++bad <= 5) ADD_FAILURE() << "input " << i << ": " << json(inputs[i]).dump();
  }
  EXPECT_EQ(bad, 0) << "of " << inputs.size() << " inputs";
}

}  // namespace
}  // namespace proctor::text
