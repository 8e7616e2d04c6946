#include "eval/runners/raw_logits.h"

#include <fmt/format.h>

#include <bit>
#include <optional>

#include "eval/formats/corpus.h"
#include "eval/runners/eval_model.h"
#include "eval/runners/logits_chunks.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {

RawLogitsResult WriteRawLogits(const RawLogitsOptions& options) {
  static_assert(std::endian::native == std::endian::little, "logits files are little-endian");
  constexpr const char* kComponent = "logits";
  CheckChunkSize(options.chunk_size, kComponent);
  if (options.prompt.empty() == options.corpus_dir.empty()) {
    Fail(kComponent,
         "logits needs tokens: a prompt (--prompt-ids 1,2,3) or a corpus (--corpus "
         "DIR), not both");
  }
  std::optional<Corpus> corpus;
  if (!options.corpus_dir.empty()) corpus.emplace(ReadCorpus(options.corpus_dir));
  RawLogitsResult result;
  result.sequences = !corpus                ? 1
                     : options.max_seqs > 0 ? std::min(options.max_seqs, corpus->n_seqs)
                                            : corpus->n_seqs;
  result.positions = corpus ? corpus->ctx_len : static_cast<int64_t>(options.prompt.size());
  const std::shared_ptr<const EvalModel> model = EvalModel::Open(options.model);
  LogitsChunkDriver driver(
      {{fmt::format("model '{}'", options.model), model->Forward(options.runtime)}},
      {.component = kComponent,
       .chunk_size = options.chunk_size,
       .decode_from = options.decode_from,
       .progress_label = "logits",
       .total_positions = static_cast<uint64_t>(result.sequences * result.positions),
       .quiet = options.quiet});
  AtomicFileWriter writer(options.out);
  for (int64_t s = 0; s < result.sequences; ++s) {
    const std::span<const int32_t> tokens =
        corpus ? corpus->Sequence(s) : std::span<const int32_t>(options.prompt);
    driver.RunSequence(
        tokens, result.positions, fmt::format("sequence {}", s), [&](const LogitsChunk& chunk) {
          for (int64_t r = 0; r < chunk.rows; ++r) {
            writer.Write(std::span<const uint8_t>(chunk[0].Row(r), chunk[0].RowBytes()));
          }
        });
  }
  driver.Finish();
  writer.Commit();
  result.vocab = driver.vocab();
  return result;
}

}  // namespace proctor
