// `proctor logits MODEL --prompt-ids ... --out FILE`: teacher-forced logits of the prompt as raw
// little-endian f32 [T, V] (for debugging and comparison with other engines). Written chunk by
// chunk into a temporary file that is renamed into place when complete.
#include <fmt/format.h>

#include "cli/engine_flags.h"
#include "cli/verbs.h"
#include "model/greedy.h"
#include "model/load.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor::cli {

void RegisterLogitsVerb(CLI::App& app) {
  struct Args {
    std::string model;
    std::string prompt_ids;
    std::string out;
    EngineFlags engine;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "logits", "Write the prompt's logits as raw little-endian f32 [tokens, vocab]");
  verb->add_option("model", args->model, "Model directory, .gguf file or cached HF id")->required();
  verb->add_option("--prompt-ids", args->prompt_ids, "Comma-separated prompt token ids")
      ->required();
  verb->add_option("-o,--out", args->out, "Output file")->required();
  args->engine.Add(*verb);
  verb->callback([args] {
    static_assert(std::endian::native == std::endian::little, "logits files are little-endian");
    const RuntimeOptions options = args->engine.Options();
    const std::vector<int32_t> prompt = ParseTokenIds(args->prompt_ids);
    const LoadedModel loaded = LoadModel(args->model);
    const RuntimeModel model(loaded.config, loaded.weights, options);
    AtomicFileWriter writer(args->out);
    RunTeacherForced(model, prompt, args->engine.chunk, [&](int64_t, const MatView& logits) {
      for (int64_t r = 0; r < logits.rows; ++r) {
        writer.Write(std::span<const uint8_t>(logits.Row(r), logits.RowBytes()));
      }
    });
    writer.Commit();
    if (!Globals().quiet) {
      fmt::print(stderr, "wrote {} x {} f32 logits to {}\n", prompt.size(), model.vocab_size(),
                 args->out);
    }
  });
}

}  // namespace proctor::cli
