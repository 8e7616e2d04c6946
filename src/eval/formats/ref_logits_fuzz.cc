// libFuzzer target: the reference-logits reader, integrity check and scorer on arbitrary bytes.
//
// The input is split at "@@@@" into manifest.json, tokens.bin, seq-0.bin, seq-1.bin, ...; the
// files are written to a scratch directory and read back through ReferenceLogitsDump. Any
// proctor::Error is an expected outcome; a crash, leak or sanitizer report is a bug.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "eval/formats/ref_logits.h"
#include "eval/formats/ref_logits_integrity.h"
#include "eval/scoring/kl_score.h"
#include "util/error.h"
#include "util/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> parts = fuzzing::SplitInput(input, 10);
  const auto dir = fuzzing::FreshScratchDir("ref_logits");
  fuzzing::WriteBytes(dir / "manifest.json", parts[0]);
  if (parts.size() > 1) fuzzing::WriteBytes(dir / "tokens.bin", parts[1]);
  for (size_t i = 2; i < parts.size(); ++i) {
    fuzzing::WriteBytes(ReferenceSequencePath(dir, static_cast<int64_t>(i - 2)), parts[i]);
  }
  try {
    const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(dir);
    (void)dump.Label();
    try {
      CheckReferenceLogitsIntegrity(dump);
    } catch (const Error&) {
    }
    if (dump.positions() > 0) {
      // Score sequence 0 against a small deterministic candidate (vocabulary 64).
      constexpr int64_t kVocab = 64;
      const int64_t rows = dump.positions();
      std::vector<float> logits(static_cast<size_t>(rows * kVocab));
      for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 13) * 0.25f;
      ReferenceRecords records;
      dump.ReadRecords(0, 0, rows, &records);
      std::vector<PositionScore> scores(static_cast<size_t>(rows));
      ThreadPool pool(1);
      ScoreChunk(records,
                 MatView{DType::kF32, rows, kVocab, kVocab * sizeof(float),
                         reinterpret_cast<const uint8_t*>(logits.data())},
                 rows, "fuzz", pool, scores.data());
    }
    (void)dump.Tokens(dump.n_seqs() - 1);
  } catch (const Error&) {
  }
  return 0;
}
