// `proctor logits MODEL (--prompt-ids ... | --corpus DIR [--n N]) --out FILE`: teacher-forced
// logits as raw little-endian f32 (for debugging and comparison with other engines and
// oracles): [T, V] for a prompt, [N, ctx_len, V] for the first N sequences of a corpus (each
// sequence with its own cache, as `kl` and `dump` run them). Written chunk by chunk into a
// temporary file that is renamed into place when complete.
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "eval/corpus.h"
#include "model/greedy.h"
#include "model/load.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::cli {

void RegisterLogitsVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt_ids;
    std::string corpus;
    int64_t n = 0;
    std::string out;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "logits",
      "Write teacher-forced logits as raw little-endian f32 ([tokens, vocab], or "
      "[sequences, ctx_len, vocab] for --corpus)");
  verb->add_option("model", args->model, "Model directory, .gguf file or cached HF id")->required();
  auto* prompt =
      verb->add_option("--prompt-ids", args->prompt_ids, "Comma-separated prompt token ids");
  auto* corpus = verb->add_option("--corpus", args->corpus,
                                  "Corpus directory: the logits of its sequences, one cache each");
  prompt->excludes(corpus);
  verb->add_option("--n", args->n, "With --corpus: only the first N sequences (default: all)")
      ->check(CLI::NonNegativeNumber)
      ->needs(corpus);
  verb->add_option("-o,--out", args->out, "Output file")->required();
  args->engine.Add(*verb);
  verb->callback([args] {
    static_assert(std::endian::native == std::endian::little, "logits files are little-endian");
    if (args->prompt_ids.empty() && args->corpus.empty()) {
      Fail("cli", "logits needs tokens: --prompt-ids 1,2,3 or --corpus DIR");
    }
    const RuntimeOptions options = args->engine.Options();
    std::vector<std::vector<int32_t>> sequences;
    if (!args->corpus.empty()) {
      const Corpus tokens_source = ReadCorpus(args->corpus);
      const int64_t n =
          args->n > 0 ? std::min(args->n, tokens_source.n_seqs) : tokens_source.n_seqs;
      for (int64_t s = 0; s < n; ++s) {
        const auto seq = tokens_source.Sequence(s);
        sequences.emplace_back(seq.begin(), seq.end());
      }
    } else {
      sequences.push_back(ParseTokenIds(args->prompt_ids));
    }
    const LoadedModel loaded = LoadModel(args->model);
    const RuntimeModel model(loaded.config, loaded.weights, options);
    AtomicFileWriter writer(args->out);
    for (const auto& tokens : sequences) {
      RunTeacherForced(model, tokens, args->engine.chunk, [&](int64_t, const MatView& logits) {
        for (int64_t r = 0; r < logits.rows; ++r) {
          writer.Write(std::span<const uint8_t>(logits.Row(r), logits.RowBytes()));
        }
      });
    }
    writer.Commit();
    if (!Globals().quiet) {
      fmt::print(stderr, "wrote {} x {} x {} f32 logits to {}\n", sequences.size(),
                 sequences.front().size(), model.vocab_size(), args->out);
    }
  });
}

}  // namespace proctor::cli
