// A model opened once for an evaluation: its tokenizer is loaded when it has one (a damaged one is
// an error naming the file, never silently "no tokenizer"), its identity and forward come from the
// same object.
#include "eval/runners/eval_model.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "eval/testing_dumps.h"
#include "model/teacher_forced.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using testing::ErrorOf;

fs::path Fixtures() {
  const char* env = std::getenv("PROCTOR_FIXTURES");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(PROCTOR_FIXTURES_DEFAULT);
}

TEST(EvalModel, AGgufCarriesItsTokenizerAndItsIdentity) {
  const fs::path gguf = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(gguf)) GTEST_SKIP() << "fixture absent: " << gguf;
  const auto model = EvalModel::Open(gguf.string());
  ASSERT_NE(model->tokenizer(), nullptr);
  const VocabularyIdentity id = model->Identity("candidate");
  EXPECT_EQ(id.source, "candidate '" + gguf.string() + "'");
  EXPECT_EQ(id.logits_vocab, 512);
  EXPECT_EQ(id.tokenizer_vocab, 512);
  EXPECT_EQ(id.bos_id, 1);
  EXPECT_TRUE(id.tokenizer_sha256.has_value());
  // The forward keeps the model alive after the last handle is gone.
  const TeacherForcedLogits forward = model->Forward({});
  const std::vector<int32_t> tokens = {1, 300, 301};
  const MatView logits = forward(3)->Step(tokens);
  EXPECT_EQ(logits.rows, 3);
  EXPECT_EQ(logits.cols, 512);
}

TEST(EvalModel, WeightsOnlyModelsHaveNoTokenizerAndDamagedTokenizersAreErrors) {
  const fs::path golden = Fixtures() / "hf-goldens" / "llama-f32";
  if (!fs::exists(golden / "model.safetensors")) GTEST_SKIP() << "fixture absent: " << golden;
  testing::TempDir temp;
  const fs::path dir = temp.path() / "model";
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(golden / f, dir / f);
  const auto bare = EvalModel::Open(dir.string());
  EXPECT_EQ(bare->tokenizer(), nullptr);
  EXPECT_FALSE(bare->Identity("m").tokenizer_sha256.has_value());
  EXPECT_EQ(bare->Identity("m").logits_vocab, 512);
  EXPECT_EQ(bare->Describe("candidate")["kind"], "model-directory");
  testing::WriteBytes(dir / "tokenizer.json", "{\"model\": ");  // truncated
  const std::string error = ErrorOf([&] { EvalModel::Open(dir.string()); });
  EXPECT_NE(error.find((dir / "tokenizer.json").string()), std::string::npos) << error;
}

TEST(EvalModel, SyntheticModelsHaveShapesButNoFilesOrTokenizer) {
  const auto model = EvalModel::Open("synthetic:tiny:f32");
  EXPECT_EQ(model->tokenizer(), nullptr);
  EXPECT_TRUE(model->path().empty());
  EXPECT_EQ(model->Describe("candidate")["kind"], "unresolved");
  EXPECT_NE(ErrorOf([] { EvalModel::Open("synthetic:tiny:q9"); }).find("q9"), std::string::npos);
}

}  // namespace
}  // namespace proctor
