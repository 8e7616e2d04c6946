// Corpus/dump/model vocabulary mismatches: what `proctor dump` records about the teacher's
// vocabulary, and the errors kl gives a candidate (or a second model) whose tokenizer differs.
// Uses the stories260K fixture and llama.cpp's vocabulary files (skips when absent).
#include "eval/runners/vocab_check.h"

#include <gtest/gtest.h>

#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/teacher_dump.h"
#include "eval/testing_dumps.h"
#include "util/error.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;
using testing::TempDir;

fs::path Fixtures() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr ? env : PROCTOR_FIXTURES_DEFAULT;
}
fs::path Stories260K() { return Fixtures() / "stories260K" / "stories260K.gguf"; }
fs::path Vocab(const char* name) { return Fixtures() / "llama.cpp-vocab" / name; }

TEST(TokenizerFingerprint, SameVocabularySameHashDifferentVocabularyDifferentHash) {
  const fs::path spm = Vocab("ggml-vocab-llama-spm.gguf"), phi = Vocab("ggml-vocab-phi-3.gguf");
  if (!fs::exists(spm) || !fs::exists(phi)) GTEST_SKIP() << "fixture absent: " << spm;
  const std::string a = TokenizerFingerprint(*text::LoadTokenizer(spm));
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, TokenizerFingerprint(*text::LoadTokenizer(spm)));
  // phi-3 is llama's SentencePiece vocabulary with extra special tokens: a different tokenizer.
  EXPECT_NE(a, TokenizerFingerprint(*text::LoadTokenizer(phi)));
}

TEST(VocabularyCheck, RecordedValuesAgainstAModel) {
  VocabularyIdentity model{.source = "candidate model 'm'",
                           .logits_vocab = 151936,
                           .tokenizer_vocab = 151669,
                           .tokenizer_sha256 = "aa",
                           .bos_id = -1,
                           .eos_id = 151645};
  VocabularyIdentity recorded{.source = "'corpus/manifest.json'"};
  CheckRecordedVocabulary(recorded, model);  // records nothing: nothing to compare
  recorded.tokenizer_vocab = 151669;         // the tokenizer's size is fine
  CheckRecordedVocabulary(recorded, model);
  recorded.tokenizer_vocab = 151936;  // and so is the logits width
  CheckRecordedVocabulary(recorded, model);
  recorded.tokenizer_vocab = 32000;
  std::string e = ErrorOf([&] { CheckRecordedVocabulary(recorded, model); });
  EXPECT_NE(e.find("'corpus/manifest.json' records vocab_size 32000"), std::string::npos) << e;
  EXPECT_NE(e.find("logits vocabulary of 151936 and a tokenizer of 151669"), std::string::npos)
      << e;
  recorded.tokenizer_vocab.reset();
  recorded.tokenizer_sha256 = "bb";
  e = ErrorOf([&] { CheckRecordedVocabulary(recorded, model); });
  EXPECT_NE(e.find("records tokenizer_sha256 bb, but the tokenizer of candidate model 'm' has "
                   "fingerprint aa"),
            std::string::npos)
      << e;
  recorded.tokenizer_sha256 = "aa";
  recorded.eos_id = 2;
  e = ErrorOf([&] { CheckRecordedVocabulary(recorded, model); });
  EXPECT_NE(e.find("bos unknown / eos 2"), std::string::npos) << e;
  EXPECT_NE(e.find("bos -1 / eos 151645"), std::string::npos) << e;
}

TEST(VocabularyCheck, TwoModelsMustAgree) {
  VocabularyIdentity a{.source = "reference 'a'", .logits_vocab = 512, .tokenizer_sha256 = "x"};
  VocabularyIdentity b{.source = "candidate 'b'", .logits_vocab = 512};
  CheckSameVocabulary(a, b);  // b's tokenizer unknown: widths agree
  b.tokenizer_sha256 = "y";
  std::string e = ErrorOf([&] { CheckSameVocabulary(a, b); });
  EXPECT_NE(e.find("the tokenizers differ: reference 'a' and candidate 'b'"), std::string::npos)
      << e;
  b.logits_vocab = 513;
  e = ErrorOf([&] { CheckSameVocabulary(a, b); });
  EXPECT_NE(e.find("reference 'a' has a logits vocabulary of 512, candidate 'b' has 513"),
            std::string::npos)
      << e;
}

class Stories : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(Stories260K())) GTEST_SKIP() << "fixture absent: " << Stories260K();
    std::vector<int32_t> tokens;
    tokens.reserve(2 * 24);
    for (int i = 0; i < 2 * 24; ++i) tokens.push_back(3 + (i * 37) % 500);
    WriteCorpus(temp_.path() / "corpus", tokens, 24, {{"vocab_size", 512}});
    DumpTeacher({.teacher = Stories260K().string(),
                 .corpus_dir = temp_.path() / "corpus",
                 .out_dir = dump(),
                 .top_k = 16,
                 .chunk_size = 8,
                 .quiet = true});
  }
  fs::path dump() const { return temp_.path() / "dump"; }
  std::string Score() {
    return ErrorOf([&] {
      EvaluateKlVsReferenceLogits({.reference_dir = dump(),
                                   .candidate = Stories260K().string(),
                                   .chunk_size = 8,
                                   .quiet = true});
    });
  }
  void EditManifest(const char* key, const nlohmann::json& value) {
    auto m = nlohmann::json::parse(testing::ReadBytes(dump() / "manifest.json"));
    m[key] = value;
    testing::WriteBytes(dump() / "manifest.json", m.dump(2));
  }
  TempDir temp_;
};

TEST_F(Stories, DumpRecordsTheTeachersVocabularyAndAMatchingCandidateScores) {
  const auto m = ReferenceLogitsDump::Open(dump()).manifest();
  const auto tokenizer = text::LoadTokenizer(Stories260K());
  EXPECT_EQ(m.vocab_size.value_or(-1), 512);
  EXPECT_EQ(m.tokenizer_sha256.value_or(""), TokenizerFingerprint(*tokenizer));
  EXPECT_EQ(m.bos_id.value_or(-2), tokenizer->BosId());
  EXPECT_EQ(m.eos_id.value_or(-2), tokenizer->EosId());
  EXPECT_EQ(Score(), "(no error)");
}

TEST_F(Stories, ACandidateWithADifferentTokenizerIsExplained) {
  const std::string manifest = (dump() / "manifest.json").string();
  EditManifest("tokenizer_sha256", std::string(64, '0'));
  std::string e = Score();
  EXPECT_NE(e.find(fmt::format("'{}' records tokenizer_sha256 {}", manifest, std::string(64, '0'))),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("different tokenizer"), std::string::npos) << e;
  EXPECT_NE(e.find(Stories260K().string()), std::string::npos) << e;
  EditManifest("tokenizer_sha256", nullptr);
  EditManifest("vocab_size", 32000);
  e = Score();
  EXPECT_NE(e.find("records vocab_size 32000, but candidate '" + Stories260K().string() +
                   "' has a logits vocabulary of 512"),
            std::string::npos)
      << e;
  EditManifest("vocab_size", 512);
  EditManifest("eos_id", 7);
  e = Score();
  EXPECT_NE(e.find("eos 7"), std::string::npos) << e;
}

TEST_F(Stories, TwoModelChecksTheCorpusRecord) {
  const fs::path spm = Vocab("ggml-vocab-llama-spm.gguf");
  if (!fs::exists(spm)) GTEST_SKIP() << "fixture absent: " << spm;
  const auto run = [&] {
    return ErrorOf([&] {
      EvaluateKlTwoModels({.reference = Stories260K().string(),
                           .candidate = Stories260K().string(),
                           .corpus_dir = temp_.path() / "corpus",
                           .chunk_size = 8,
                           .quiet = true});
    });
  };
  EXPECT_EQ(run(), "(no error)");
  // A corpus made with llama's 32000-token tokenizer.
  auto m = nlohmann::json::parse(testing::ReadBytes(temp_.path() / "corpus" / "manifest.json"));
  m["tokenizer_sha256"] = TokenizerFingerprint(*text::LoadTokenizer(spm));
  testing::WriteBytes(temp_.path() / "corpus" / "manifest.json", m.dump(2));
  const std::string e = run();
  EXPECT_NE(e.find((temp_.path() / "corpus" / "manifest.json").string()), std::string::npos) << e;
  EXPECT_NE(e.find("records tokenizer_sha256 " + m["tokenizer_sha256"].get<std::string>()),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace proctor
