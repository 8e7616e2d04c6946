// The local engine behind the CompletionClient seam, on the real stories260K model (its GGUF
// carries the tokenizer): completions are the engine's greedy tokens decoded, stop strings cut
// them, next-token choices follow the teacher-forced logits, and a chat request renders the
// template exactly as the chat layer does.
#include "eval/clients/engine_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "model/greedy.h"
#include "util/error.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class EngineClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gguf_ = testing::FixturesDir() / "stories260K" / "stories260K.gguf";
    if (!fs::exists(gguf_)) GTEST_SKIP() << "fixture absent: " << gguf_;
    model_ = EvalModel::Open(gguf_.string());
  }
  fs::path gguf_;
  std::shared_ptr<const EvalModel> model_;
};

TEST_F(EngineClientTest, ARawCompletionIsTheEnginesGreedyTokensDecoded) {
  EngineClient client(model_, {}, 4);  // a small chunk: the prefill runs in several pieces
  const CompletionRequest request{.prompt = "Once upon a time", .max_tokens = 40};
  const CompletionResult result = client.Complete(request);
  ASSERT_EQ(result.status, ClientStatus::kOk);
  const std::vector<int32_t> prompt = model_->tokenizer()->Encode("Once upon a time", true);
  EXPECT_EQ(prompt.front(), 1);  // BOS, as the GGUF prescribes
  EXPECT_EQ(result.prompt_tokens, static_cast<int64_t>(prompt.size()));
  GreedyOptions greedy{.max_new_tokens = 40, .chunk = 512, .stop_ids = {2}};
  const std::vector<int32_t> tokens = GreedyGenerate(*model_->Runtime({}), prompt, greedy);
  EXPECT_EQ(result.completion_tokens, static_cast<int64_t>(tokens.size()));
  // The continuation keeps its leading space: prompt + completion decodes as one text.
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), tokens.begin(), tokens.end());
  EXPECT_EQ(model_->tokenizer()->Decode(prompt, true) + result.text,
            model_->tokenizer()->Decode(all, true));
  EXPECT_EQ(result.text.front(), ',');
  EXPECT_EQ(client.Complete(request).text, result.text);  // deterministic
}

TEST_F(EngineClientTest, AStopStringEndsTheCompletionJustBeforeIt) {
  EngineClient client(model_, {}, 512);
  const CompletionResult full = client.Complete({.prompt = "Once upon a time", .max_tokens = 60});
  const size_t cut = full.text.find(" the ", 10);
  ASSERT_NE(cut, std::string::npos) << full.text;
  const CompletionResult stopped =
      client.Complete({.prompt = "Once upon a time", .max_tokens = 60, .stop = {"zzz", " the "}});
  EXPECT_EQ(stopped.text, full.text.substr(0, cut));
  EXPECT_LT(stopped.completion_tokens, full.completion_tokens);
}

TEST_F(EngineClientTest, NextTokenChoicesFollowTheTeacherForcedLogits) {
  EngineClient client(model_, {}, 3);
  const std::string prompt = "One day, Lily went to the";
  const std::vector<std::string> choices = {" park", " store", " tree", " sea"};
  const ChoiceResult result = client.ChooseNextToken({.prompt = prompt, .choices = choices});
  ASSERT_EQ(result.status, ClientStatus::kOk);
  ASSERT_EQ(result.scores.size(), 4u);
  const std::vector<int32_t> ids = model_->tokenizer()->Encode(prompt, true);
  const MatView logits = model_->Forward({})(static_cast<int64_t>(ids.size()))->Step(ids);
  const float* last = logits.RowAs<float>(logits.rows - 1);
  int best = 0;
  for (size_t c = 0; c < choices.size(); ++c) {
    const std::vector<int32_t> with = model_->tokenizer()->Encode(prompt + choices[c], true);
    ASSERT_GT(with.size(), ids.size());
    EXPECT_NEAR(result.scores[c], last[with[ids.size()]], 1e-4) << choices[c];
    if (result.scores[c] > result.scores[static_cast<size_t>(best)]) best = static_cast<int>(c);
  }
  EXPECT_EQ(result.choice, best);
}

TEST_F(EngineClientTest, WithoutAChatTemplateChatIsUnavailableAndSaysSo) {
  EngineClient client(model_, {}, 512);
  EXPECT_FALSE(client.CanChat());
  EXPECT_EQ(client.Describe()["chat_template"], "none");
  CompletionRequest chat{.chat = true};
  chat.messages = {{{"role", "user"}, {"content", "hi"}}};
  try {
    client.Complete(chat);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no chat template"));
  }
}

TEST_F(EngineClientTest, AChatRequestIsTheRenderedTemplateEncodedWithoutSpecialTokens) {
  const fs::path jinja = testing::FixturesDir() / "chat-templates" / "Qwen-Qwen3-0.6B.jinja";
  if (!fs::exists(jinja)) GTEST_SKIP() << "fixture absent: " << jinja;
  EngineClient client(model_, {}, 512, jinja);
  EXPECT_TRUE(client.CanChat());
  EXPECT_TRUE(client.CanUseTools());  // Qwen3's template renders tools
  const fs::path gemma = testing::FixturesDir() / "chat-templates" / "google-gemma-2-2b-it.jinja";
  EXPECT_FALSE(EngineClient(model_, {}, 512, gemma).CanUseTools());  // Gemma 2's does not
  CompletionRequest chat{.chat = true, .enable_thinking = false};
  chat.messages = {{{"role", "user"}, {"content", "Tell me a story."}}};
  // transformers' rendering of this template (chat_template_oracle_test.cc checks the renderer).
  const std::string rendered =
      "<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n<think>\n\n"
      "</think>\n\n";
  EXPECT_EQ(client.PromptIds(chat), model_->tokenizer()->Encode(rendered, false));
  EXPECT_EQ(client.Complete(chat).status, ClientStatus::kOk);
}

// The shared-context path (the context's cache cloned per continuation) against one plain
// teacher-forced pass over context + continuation per request, log-softmax summed here in
// double; and lm-eval's split: the context's trailing space moves to the continuation.
TEST_F(EngineClientTest, LoglikelihoodsEqualATeacherForcedPassOverTheWholeText) {
  EngineClient client(model_, {}, 4);
  const std::vector<LoglikelihoodRequest> requests = {
      {"Once upon a time, there was a", " little girl named Lily."},
      {"Once upon a time, there was a", " big dog."},
      {"Once upon a time, there was a", " x"},
      {"One day, Tim went to the ", "park."},  // trailing space: moves to the continuation
  };
  const LoglikelihoodResult result = client.Loglikelihoods(requests);
  ASSERT_EQ(result.status, ClientStatus::kOk);
  ASSERT_EQ(result.logprobs.size(), requests.size());
  const text::Tokenizer& tok = *model_->tokenizer();
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].continuation);
    std::string context = requests[i].context, continuation = requests[i].continuation;
    if (context.back() == ' ') {
      context.pop_back();
      continuation.insert(continuation.begin(), ' ');
    }
    const size_t split = tok.Encode(context, true).size();
    const std::vector<int32_t> whole = tok.Encode(context + continuation, true);
    ASSERT_GT(whole.size(), split);
    const MatView logits = model_->Forward({})(static_cast<int64_t>(whole.size()))->Step(whole);
    double expected = 0;
    bool greedy = true;
    for (size_t t = split; t < whole.size(); ++t) {
      const float* row = logits.RowAs<float>(static_cast<int64_t>(t) - 1);
      double max = -INFINITY, sum = 0;
      int32_t best = 0;
      for (int64_t v = 0; v < logits.cols; ++v) {
        if (row[v] > max) {
          max = row[v];
          best = static_cast<int32_t>(v);
        }
      }
      for (int64_t v = 0; v < logits.cols; ++v) sum += std::exp(row[v] - max);
      expected += row[whole[t]] - max - std::log(sum);
      greedy = greedy && best == whole[t];
    }
    EXPECT_NEAR(result.logprobs[i], expected, 1e-4 * std::max(1.0, std::fabs(expected)));
    EXPECT_EQ(result.greedy[i], greedy);
  }
  // The story model prefers its own story.
  EXPECT_GT(result.logprobs[0] / 7, result.logprobs[2] / 1);
}

// MMLU's shared prefix evaluated once and its cache cloned: the same letter and (to float
// rounding of a different chunking) the same logits as the prompt evaluated whole.
TEST_F(EngineClientTest, ASharedPrefixIsEvaluatedOnceWithTheSameChoices) {
  EngineClient reuse(model_, {}, 64), whole(model_, {}, 64);
  whole.set_context_reuse(false);
  const std::string prefix = "Once upon a time, there was a little girl named Lily.\n\n";
  for (const char* question : {"She liked the", "One day she saw a big", "Tom and"}) {
    SCOPED_TRACE(question);
    const ChoiceRequest request{.prompt = prefix + question,
                                .choices = {" park", " ball", " dog", " cat"},
                                .shared_prefix = prefix};
    const ChoiceResult a = reuse.ChooseNextToken(request);
    const ChoiceResult b = whole.ChooseNextToken(request);
    EXPECT_EQ(a.choice, b.choice);
    ASSERT_EQ(a.scores.size(), b.scores.size());
    for (size_t c = 0; c < a.scores.size(); ++c) EXPECT_NEAR(a.scores[c], b.scores[c], 1e-4);
  }
  EXPECT_EQ(reuse.prefix_reuses(), 3);
  EXPECT_EQ(whole.prefix_reuses(), 0);
  // A prompt that does not start with the prefix is evaluated whole.
  const ChoiceRequest other{.prompt = "Tom went", .choices = {" home"}, .shared_prefix = prefix};
  EXPECT_NEAR(reuse.ChooseNextToken(other).scores[0], whole.ChooseNextToken(other).scores[0], 1e-6);
}

TEST(EngineClient, AModelWithoutATokenizerIsAnError) {
  const auto model = EvalModel::Open("synthetic:tiny:f32");
  try {
    EngineClient client(model, {}, 512);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no tokenizer"));
    EXPECT_THAT(e.what(), HasSubstr("synthetic:tiny:f32"));
  }
}

}  // namespace
}  // namespace proctor
