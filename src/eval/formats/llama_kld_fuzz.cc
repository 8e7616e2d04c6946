// libFuzzer target: the llama.cpp base-file (.kld) reader and the llama.cpp-convention scorer on
// arbitrary bytes.
//
// The input is written to a scratch file and opened with LlamaKldFile; when it opens, every
// chunk's tokens and records are read and chunk 0 is scored against a small deterministic
// candidate, and the last record is re-encoded from logits taken from the input bytes. Any
// proctor::Error is an expected outcome; a crash, leak or sanitizer report is a bug.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/formats/llama_kld.h"
#include "eval/scoring/llama_kld_score.h"
#include "util/error.h"
#include "util/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proctor;
  static const std::filesystem::path path = fuzzing::ScratchPath("llama_kld.kld");
  fuzzing::WriteBytes(path, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const LlamaKldFile file = LlamaKldFile::Open(path);
    LlamaKldRecords records;
    const int64_t n_vocab = file.n_vocab();
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    for (int64_t i = 0; i < n_vocab; ++i) logits[i] = static_cast<float>(i % 13) * 0.25f;
    LlamaKlSums sums;
    std::vector<float> kld, p_diff;
    for (int64_t c = 0; c < file.n_chunk(); ++c) {
      const auto tokens = file.Tokens(c);
      file.ReadRecords(c, 0, file.records_per_chunk(), &records);
      if (c != 0) continue;
      for (int64_t r = 0; r < records.count; ++r) {
        const int32_t next = tokens[static_cast<size_t>(file.first_position() + r + 1)];
        const LlamaPositionScore s =
            ScoreLlamaPosition(logits.data(), n_vocab, records.Row(r), next, "fuzz", r);
        sums.Add(s);
        kld.push_back(static_cast<float>(s.kld));
        p_diff.push_back(s.p_diff);
      }
    }
    (void)ComputeLlamaKlStats(sums, kld, p_diff);
    // Re-encode a row of logits made from the input's bytes (NaN and inf included).
    std::vector<float> row(static_cast<size_t>(n_vocab), 0.f);
    std::memcpy(row.data(), data, std::min(size, row.size() * sizeof(float)));
    std::vector<uint16_t> encoded(static_cast<size_t>(LlamaKldRecordWords(n_vocab)));
    (void)EncodeLlamaKldRecord(row, 0, encoded.data());
  } catch (const Error&) {
  }
  return 0;
}
