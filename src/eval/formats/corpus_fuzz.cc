// libFuzzer target: the corpus reader (ReadCorpus, SliceCorpus) on arbitrary bytes.
//
// The input is split at "@@@@" into manifest.json and tokens.bin. When the manifest parses as a
// JSON object its tokens_sha256 is set to the real digest of tokens.bin, so the fuzzer reaches
// the checks past the digest (sizes from ctx_len x n_seqs, token ids, vocab_size). Any
// proctor::Error is an expected outcome; a crash, an overflow or a huge allocation is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/formats/corpus.h"
#include "util/error.h"
#include "util/fuzz_files.h"
#include "util/sha256.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor;
  const std::vector<std::string_view> parts =
      fuzzing::SplitInput(std::string_view(reinterpret_cast<const char*>(data), size), 2);
  const std::string_view tokens = parts.size() > 1 ? parts[1] : std::string_view();
  std::string manifest(parts[0]);
  nlohmann::json j = nlohmann::json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    j["tokens_sha256"] = Sha256Hex(tokens);
    manifest = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  const auto dir = fuzzing::FreshScratchDir("corpus");
  fuzzing::WriteBytes(dir / "manifest.json", manifest);
  if (parts.size() > 1) fuzzing::WriteBytes(dir / "tokens.bin", tokens);
  try {
    const Corpus corpus = ReadCorpus(dir);
    const CorpusSlice slice = SliceCorpus(corpus, 0, -1, "fuzz");
    (void)slice.n_seqs();
    CheckCorpusVocabularyMatches(corpus, 64, std::nullopt, "fuzz", "fuzz");
  } catch (const Error&) {
  }
  return 0;
}
