// --prompts: reading a prompt file (eval/runners/prompt_set.h) and the decode path over prompts
// of their own lengths (EvaluateKlTwoModels), checked prompt by prompt against the corpus path.
#include "eval/runners/prompt_set.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <memory>

#include "eval/formats/corpus.h"
#include "eval/formats/per_position.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/kl_eval.h"
#include "eval/testing_dumps.h"
#include "text/tokenizer/tokenizer.h"

namespace proctor {
namespace {

using testing::ErrorOf;
using testing::TempDir;

// Text rows are a row of `proctor corpus` each: the tokenizer's ids with special tokens, then
// EOS; kept in file order, cut to max_tokens, skipped below min_tokens, at most max_prompts.
TEST(PromptSet, RowsAreCorpusRowsInFileOrderCutAndSkipped) {
  const auto gguf = testing::FixturesDir() / "stories260K" / "stories260K.gguf";
  if (!std::filesystem::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const auto tokenizer = text::LoadTokenizer(gguf);
  TempDir temp;
  const auto file = temp.path() / "p.jsonl";
  const std::vector<std::string> texts = {
      "Once upon a time there was a little boy named Ben.", "Hi.",
      "The cat sat on the mat and looked at the big red ball for a long time.",
      "Lily and her mom went to the park to play.", "They were happy."};
  {
    std::ofstream out(file);
    for (const auto& t : texts) out << nlohmann::json{{"text", t}}.dump() << "\n\n";
  }
  const auto ids = [&](const std::string& text) {
    std::vector<int32_t> v = tokenizer->Encode(text, /*add_special_tokens=*/true);
    v.push_back(tokenizer->EosId());
    return v;
  };
  const int64_t short_length = static_cast<int64_t>(ids("Hi.").size());
  const PromptSet set = ReadPromptSet(
      file, *tokenizer,
      {.max_prompts = 3, .max_tokens = 14, .min_tokens = short_length + 1, .quiet = true});
  EXPECT_EQ(set.rows, 5);
  ASSERT_EQ(set.size(), 3);
  EXPECT_EQ(set.skipped_short, 1);  // "Hi."; "They were happy." is past the third prompt
  EXPECT_EQ(set.lines, (std::vector<int64_t>{1, 5, 7}));  // blank lines between the rows
  int64_t cut = 0;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<int32_t> expected = ids(texts[i == 0 ? 0 : i + 1]);
    cut += expected.size() > 14 ? 1 : 0;
    if (expected.size() > 14) expected.resize(14);
    const auto prompt = set.Prompt(i);
    EXPECT_EQ(std::vector<int32_t>(prompt.begin(), prompt.end()), expected) << i;
  }
  EXPECT_EQ(set.truncated, cut);
  EXPECT_GT(cut, 0);
  EXPECT_EQ(set.longest(), 14);
  EXPECT_EQ(set.sha256.size(), 64u);
  // The token digest changes with the prompts.
  const PromptSet all = ReadPromptSet(file, *tokenizer, {.max_prompts = 0, .quiet = true});
  EXPECT_EQ(all.size(), 5);
  EXPECT_NE(all.tokens_sha256, set.tokens_sha256);

  EXPECT_NE(ErrorOf([&] {
              ReadPromptSet(file, *tokenizer,
                            {.max_tokens = 1000, .min_tokens = 500, .quiet = true});
            }).find("no prompt has the 500 tokens needed"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              ReadPromptSet(temp.path(), *tokenizer, {.quiet = true});
            }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              ReadPromptSet(file, *tokenizer, {.max_tokens = 4, .min_tokens = 6, .quiet = true});
            }).find("--seq 4 keeps fewer tokens than the 6"),
            std::string::npos);
}

// Each prompt scores exactly what a corpus holding only that prompt scores on the decode path:
// its own prefill length, and the candidate's affine cache converted at the end of its own
// prefill (prompts of 9 to 40 tokens, prefills of 5 to 36 positions in chunks of 8).
TEST(PromptSet, EachPromptOnTheDecodePathScoresWhatItsOwnCorpusScores) {
  const auto model = EvalModel::Open("synthetic:tiny:f32");
  auto prompts = std::make_shared<PromptSet>();
  prompts->path = "prompts.jsonl";
  prompts->starts = {0};
  const std::vector<int64_t> lengths = {9, 40, 14, 23};
  for (size_t i = 0; i < lengths.size(); ++i) {
    for (int64_t k = 0; k < lengths[i]; ++k) {
      prompts->tokens.push_back(static_cast<int32_t>((37 * i + 11 * k + 3) % 512));
    }
    prompts->starts.push_back(static_cast<int64_t>(prompts->tokens.size()));
    prompts->lines.push_back(static_cast<int64_t>(i) + 1);
  }
  TempDir temp;
  RuntimeOptions runtime;
  runtime.kv = ParseKvScheme("affine:4:g32");
  KlTwoModelOptions options{.reference = "tiny",
                            .candidate = "tiny",
                            .chunk_size = 8,
                            .decode_steps = 3,
                            .prompts = prompts,
                            .opened = model,
                            .runtime = runtime,
                            .quiet = true,
                            .per_position = temp.path() / "prompts.bin",
                            .check_tokenizer = false};
  const KlEvalResult all = EvaluateKlTwoModels(options);
  EXPECT_EQ(all.manifest.n_seqs, 4);
  EXPECT_EQ(all.prompts["scored"], 4);
  EXPECT_GT(all.stats.kl.mean, 0.0);
  const PerPositionFile file = ReadPerPositionFile(options.per_position);
  ASSERT_EQ(file.records.size(), 12u);
  for (size_t i = 0; i < lengths.size(); ++i) {
    SCOPED_TRACE(i);
    const auto dir = temp.path() / fmt::format("corpus{}", i);
    const auto prompt = prompts->Prompt(static_cast<int64_t>(i));
    WriteCorpus(dir, std::vector<int32_t>(prompt.begin(), prompt.end()), lengths[i],
                {{"vocab_size", 512}});
    KlTwoModelOptions one = options;
    one.prompts = nullptr;
    one.corpus_dir = dir;
    one.per_position = temp.path() / fmt::format("one{}.bin", i);
    EvaluateKlTwoModels(one);
    const PerPositionFile alone = ReadPerPositionFile(one.per_position);
    ASSERT_EQ(alone.records.size(), 3u);
    for (size_t p = 0; p < 3; ++p) {
      const PerPositionRecord& a = file.records[3 * i + p];
      EXPECT_EQ(a.seq, i);
      EXPECT_EQ(a.position, alone.records[p].position);
      const PositionScore& b = alone.records[p].score;
      // Bit for bit (NaN, the teacher's NLL of a two-model run, equals itself here).
      const auto same = [](double x, double y) {
        return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
      };
      EXPECT_TRUE(same(a.score.kl, b.kl)) << p;
      EXPECT_TRUE(same(a.score.tail_kl, b.tail_kl)) << p;
      EXPECT_TRUE(same(a.score.candidate_nll, b.candidate_nll)) << p;
      EXPECT_TRUE(same(a.score.teacher_nll, b.teacher_nll)) << p;
      EXPECT_EQ(a.score.next_token, b.next_token) << p;
      EXPECT_EQ(a.score.candidate_argmax, b.candidate_argmax) << p;
      EXPECT_TRUE(same(a.score.teacher_top1_probability, b.teacher_top1_probability)) << p;
      EXPECT_GT(a.score.kl, 0.0) << p;
    }
  }
  // Prompts are only for the decode path.
  options.decode_steps = 0;
  EXPECT_NE(ErrorOf([&] { EvaluateKlTwoModels(options); }).find("--prompts needs --decode-steps"),
            std::string::npos);
}

}  // namespace
}  // namespace proctor
