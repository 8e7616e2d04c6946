// `proctor quantize SRC --out DIR [--bits B] [--group-size G] [--mode M] [--recipe R]
// [--skip PATTERN]... [--json FILE]`: a full-precision model to an MLX-format directory
// (model/mlx_export.h); `proctor quantize SRC.gguf --out OUT.gguf --type T [--pure]`: a float
// GGUF to llama.cpp's file type T (model/gguf_quantize.h). Both print what was quantized, the
// bits per weight and the size.
#include <fmt/format.h>

#include "cli/verbs.h"
#include "model/gguf_quantize.h"
#include "model/gguf_recipe.h"
#include "model/load.h"
#include "model/mlx_export.h"
#include "model/quant_recipe.h"
#include "text/tokenizer/gguf_to_hf.h"
#include "text/tokenizer/hf_to_gguf_vocab.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"

namespace proctor::cli {

void RegisterQuantizeVerb(CLI::App& app) {
  struct Args {
    std::string source;
    std::string out;
    int bits = 0;
    int group_size = 0;
    std::string mode = "affine";
    std::string recipe;
    std::vector<std::string> skip;
    std::string json;
    std::string gguf_type;
    bool pure = false;
  };
  auto args = std::make_shared<Args>();
  auto* verb = app.add_subcommand(
      "quantize",
      "Quantize a full-precision model into an MLX-format directory (mlx-lm layout), or into a "
      "GGUF of a llama.cpp file type (--type)");
  verb->footer(
      "Examples:\n"
      "  proctor quantize Qwen/Qwen3-0.6B --out qwen-4bit --bits 4 --group-size 64\n"
      "  proctor quantize model-f16.gguf --out model-q4_k_m.gguf --type q4_k_m\n"
      "  proctor quantize ./Llama-3.2-1B --out llama-q8_0.gguf --type q8_0\n"
      "A GGUF written with --type has llama-quantize's tensor types and blocks (no importance "
      "matrix) and carries the source's tokenizer, chat template and metadata. A safetensors "
      "source (Llama and Mistral checkpoints) is read as llama.cpp's convert_hf_to_gguf.py "
      "--outtype f32 writes it, so the file is what that and llama-quantize make.");
  verb->add_option("source,--model", args->source,
                   "Model directory (f32/f16/bf16 safetensors), .gguf with float tensors, or "
                   "cached HF id")
      ->required();
  verb->add_option(
          "-o,--out", args->out,
          "Output: an MLX directory (must not exist, or be empty), or with --type a .gguf file "
          "(must not exist)")
      ->required();
  verb->add_option("--bits", args->bits,
                   "Bits per weight: affine 2, 3, 4, 5, 6, 8 (default 4); mxfp4/nvfp4 4; mxfp8 8");
  verb->add_option("--group-size", args->group_size,
                   "Weights per scale: affine 32, 64, 128 (default 64); mxfp4/mxfp8 32; nvfp4 16");
  verb->add_option("--mode", args->mode, "affine (default), mxfp4, mxfp8 or nvfp4");
  verb->add_option("--recipe", args->recipe,
                   "Mixed precision as mlx-lm: " + QuantRecipeNames() +
                       " (low/high bits; high bits for lm_head and, in the first and last "
                       "eighth of the layers and every third layer between, v_proj and "
                       "down_proj)");
  verb->add_option("--skip", args->skip,
                   "Keep modules matching this glob in full precision (repeatable; '*' matches "
                   "anything, e.g. 'lm_head' or 'model.layers.0.*')");
  verb->add_option(
      "--type", args->gguf_type,
      "Write a GGUF of this llama.cpp file type (" + GgufFileTypeNames() +
          "); the source is a GGUF with float tensors or a Llama / Mistral safetensors directory "
          "with its tokenizer.json, and --out a .gguf name");
  verb->add_flag("--pure", args->pure,
                 "With --type: every quantizable tensor at the type's base type (llama-quantize "
                 "--pure), no per-tensor rules");
  verb->add_option("--json", args->json, "Also write the summary as JSON to this file");
  verb->callback([args, verb] {
    const bool gguf_out = !args->gguf_type.empty();
    if (gguf_out) {
      for (const char* mlx_only : {"--bits", "--group-size", "--mode", "--recipe", "--skip"}) {
        if (verb->count(mlx_only) > 0) {
          Fail("quantize", "{} is for MLX output; a GGUF's types come from --type {}", mlx_only,
               args->gguf_type);
        }
      }
    } else if (args->pure) {
      Fail("quantize", "--pure needs --type (it is a GGUF option)");
    } else if (args->out.ends_with(".gguf")) {
      Fail("quantize", "--out {} names a GGUF file: say which file type with --type ({})",
           args->out, GgufFileTypeNames());
    }
    const bool quiet = Globals().quiet;
    std::unique_ptr<Progress> progress;
    auto on_tensor = [&](const std::string&, size_t, size_t count) {
      if (!progress) {
        progress = std::make_unique<Progress>(
            Progress::Options{.label = "quantize",
                              .unit = "tensors",
                              .total = count,
                              .mode = quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
      }
      progress->Advance();
    };
    if (gguf_out) {
      const GgufQuantizeReport report =
          QuantizeModelToGguf(args->source, args->out,
                              GgufQuantizeOptions{.type = args->gguf_type,
                                                  .pure = args->pure,
                                                  .on_tensor = on_tensor,
                                                  .vocabulary = text::AddHfTokenizerAsGgufVocab});
      if (progress) progress->Finish();
      fmt::print("{}", report.Summary());
      if (!args->json.empty()) WriteFileAtomic(args->json, report.ToJson().dump(2) + "\n");
      return;
    }
    MlxQuantizeOptions options;
    const std::optional<quant::MlxMode> mode = quant::ParseMlxMode(args->mode);
    if (!mode) {
      Fail("quantize", "unknown --mode \"{}\" (affine, mxfp4, mxfp8, nvfp4)", args->mode);
    }
    options.mode = *mode;
    options.bits = args->bits;
    options.group_size = args->group_size;
    options.recipe = args->recipe;
    options.skip_patterns = args->skip;
    options.on_tensor = on_tensor;
    if (const LocatedModel located = LocateModel(args->source);
        located.format == ModelFormat::kGguf) {
      options.extra_files = text::HfTokenizerFilesOf(located.path, &options.no_tokenizer_reason);
    }
    const MlxQuantizeReport report = QuantizeModelToMlx(args->source, args->out, options);
    if (progress) progress->Finish();
    fmt::print("{}", report.Summary());
    if (!args->json.empty()) WriteFileAtomic(args->json, report.ToJson().dump(2) + "\n");
  });
}

}  // namespace proctor::cli
