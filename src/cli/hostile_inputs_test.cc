// #18 from outside: small hostile files given to the proctor executable end in exit status 1
// with the file and the value named, within seconds, under a 1 GiB address-space limit (each
// once crashed, corrupted the heap or allocated gigabytes). The classes tested here through
// their own verbs elsewhere: templates (chat_template_test), tokenizers (tokenizer_cli_test).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"  // same folder: cli_test has no src/ include path

namespace proctor::cli_test {
namespace {

// `proctor -q ARGS` under `ulimit -v 1 GiB` and a 30 s timeout; *seconds gets the wall time.
Result ProctorBounded(const std::string& args, double* seconds) {
  const auto start = std::chrono::steady_clock::now();
  Result r =
      RunShell(fmt::format("ulimit -v 1048576; timeout 30 {} -q {} 2>&1", PROCTOR_BIN, args));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void WriteText(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(HostileInputs, EndInAClearErrorWithinBoundedTimeAndMemory) {
  const fs::path stories = Fixtures() / "stories260K" / "stories260K.gguf";
  if (!fs::exists(stories)) GTEST_SKIP() << "fixture absent: " << stories;
  TempDir dir;
  // Class 2: 30,000 nested lists in a 60 KB messages file overflowed the stack.
  const fs::path messages = dir.path() / "messages.json";
  WriteText(messages, R"([{"role": "user", "content": )" + std::string(30000, '[') +
                          std::string(30000, ']') + "}]");
  WriteText(dir.path() / "chat_template.jinja", "{{ messages[0].content|length }}");
  // Class 4: n_seqs 4 x ctx_len (2^62 + 128) x 4 bytes wraps to the 2048 bytes of tokens.bin.
  const fs::path corpus = dir.path() / "corpus";
  fs::create_directories(corpus);
  const std::string tokens(2048, '\0');
  WriteText(corpus / "tokens.bin", tokens);
  const nlohmann::json manifest = {{"format_version", 1},
                                   {"kind", "kl-eval-corpus"},
                                   {"tokenizer", "t"},
                                   {"vocab_size", nullptr},
                                   {"ctx_len", (int64_t{1} << 62) + 128},
                                   {"n_seqs", 4},
                                   {"n_tokens", 512},
                                   {"seed", 1},
                                   {"chat_template", nullptr},
                                   {"sources", nlohmann::json::array()},
                                   {"tokens_sha256", "0"},
                                   {"created", "x"},
                                   {"notes", nullptr}};
  WriteText(corpus / "manifest.json", manifest.dump());
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {fmt::format("chat {} --messages {}", dir.path().string(), messages.string()),
       "nests deeper than 256 levels"},
      {fmt::format("ppl {} --data {}", stories.string(), corpus.string()),
       "is 2048 bytes; n_seqs 4 x ctx_len 4611686018427388032 x 4 needs more than 2^64"},
      {fmt::format("dump --teacher {} --corpus {} --out {}", stories.string(), corpus.string(),
                   (dir.path() / "dump").string()),
       "is 2048 bytes; n_seqs 4 x ctx_len 4611686018427388032 x 4 needs more than 2^64"},
  };
  for (const auto& c : cases) {
    double seconds = 0;
    const Result r = ProctorBounded(c.args, &seconds);
    EXPECT_EQ(r.status, 1) << c.args << ": " << r.out;
    EXPECT_TRUE(Contains(r.out, c.message)) << c.args << ": " << r.out;
    EXPECT_LT(seconds, 5) << c.args;
  }
}

}  // namespace
}  // namespace proctor::cli_test
