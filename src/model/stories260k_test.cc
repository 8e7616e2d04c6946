// stories260K (a real trained llama2.c model, GGUF, adjacent-pair RoPE, tied head): greedy
// decoding from BOS reproduces the reference story printed in llama2.c's stories260K.md
// character for character. Pieces come from the GGUF vocabulary (tokenizer.ggml.tokens):
// "▁" is a space and "<0xNN>" a byte, as llama2.c's run.c decodes them. Skips without the
// fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "formats/gguf.h"
#include "model/greedy.h"
#include "model/load.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

std::string DecodePieces(std::span<const std::string_view> vocab, std::span<const int32_t> ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string_view raw = vocab[static_cast<size_t>(ids[i])];
    std::string piece;
    if (raw.size() == 6 && raw.starts_with("<0x") && raw.back() == '>') {
      piece.push_back(static_cast<char>(std::stoi(std::string(raw.substr(3, 2)), nullptr, 16)));
    } else {
      for (size_t k = 0; k < raw.size(); ++k) {
        if (raw.substr(k, 3) == "\xE2\x96\x81") {  // U+2581, SentencePiece's space
          piece.push_back(' ');
          k += 2;
        } else {
          piece.push_back(raw[k]);
        }
      }
    }
    if (i == 0 && !piece.empty() && piece[0] == ' ') piece.erase(piece.begin());  // run.c
    text += piece;
  }
  return text;
}

// The block after the `-t 0.0` command line in stories260K.md.
std::string ReferenceStory(const fs::path& md) {
  std::ifstream in(md);
  std::stringstream all;
  all << in.rdbuf();
  const std::string s = all.str();
  const size_t command = s.find("-t 0.0\n");
  if (command == std::string::npos) return "";
  const size_t begin = command + 7;
  const size_t end = s.find("\n```", begin);
  return s.substr(begin, end - begin);
}

TEST(Stories260K, GreedyFromBosReproducesTheReferenceStory) {
  const fs::path dir = proctor::testing::FixturesDir() / "stories260K";
  if (!fs::exists(dir / "stories260K.gguf")) GTEST_SKIP() << "fixture absent: " << dir;
  const std::string expected = ReferenceStory(dir / "stories260K.md");
  ASSERT_GT(expected.size(), 500u);

  const LoadedModel loaded = LoadModel((dir / "stories260K.gguf").string());
  ASSERT_TRUE(loaded.gguf);
  EXPECT_TRUE(loaded.config.rope_adjacent_pairs);
  const auto vocab = loaded.gguf->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(vocab.size(), 512u);
  for (const auto kv : {DType::kF32, DType::kBF16}) {
    RuntimeOptions options;
    options.kv = KvScheme::Dense(kv);
    const RuntimeModel model(loaded.config, loaded.weights, options);
    GreedyOptions greedy;
    greedy.max_new_tokens = 256;  // run.c: 256 steps, each emits one token after BOS
    greedy.stop_ids = {1};        // run.c stops when the model emits BOS
    const std::vector<int32_t> bos = {1};
    const std::vector<int32_t> ids = GreedyGenerate(model, bos, greedy);
    const std::string story = DecodePieces(vocab, ids);
    if (kv == DType::kF32) {
      EXPECT_EQ(story, expected);
    } else {  // bf16 KV storage: the same story at least through the first sentences
      EXPECT_EQ(story.substr(0, 200), expected.substr(0, 200)) << "kv bf16";
    }
  }
}

}  // namespace
}  // namespace proctor
