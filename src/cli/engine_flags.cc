// Shared engine flags (see engine_flags.h).
#include "cli/engine_flags.h"

#include <fmt/format.h>

#include <filesystem>

#include "util/error.h"

namespace proctor::cli {

void EngineFlags::Add(CLI::App& verb) {
  verb.add_option("--compute", compute,
                  "How activations enter matrix products: f32 (default: activations and "
                  "accumulation in f32, exact for the stored weights), bf16 (activations rounded "
                  "to bf16; faster with bf16 weights) or q8 (activations quantized to 8 bits "
                  "before products with GGUF block weights exactly as llama.cpp's CPU backend "
                  "does: per 32 values for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, per 256 for the K-quants; "
                  "integer dot products, faster decode). What a mode costs: proctor kl --self "
                  "compute=f32:q8")
      ->check(CLI::IsMember({"f32", "bf16", "q8"}));
  verb.add_option(
      "--kv", kv,
      "KV cache scheme: f32 (default), bf16, f16, ggml:TYPE (llama.cpp's cache types "
      "q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl; ggml:KTYPE/VTYPE for keys and values apart), or "
      "affine:BITS[:gGROUP] (mlx-lm's quantized KV cache: bits 2, 3, 4, 5, 6, 8; "
      "group g32, g64 (default), g128 along each head), e.g. --kv affine:4:g64, or "
      "turbo:kKvV (TurboQuant: affine keys of K bits 2, 4, 5, 8 per 32 with fp16 "
      "scale and offset; Hadamard-rotated values, Lloyd-Max codes of V bits 2, 3, 4, "
      "8; 'turbo' is turbo:k8v3), or config:FILE (per-layer affine bits from a JSON "
      "list, one entry per layer; 'config': the model directory's kv_config.json)");
  verb.add_option("--kv-k", kv_k,
                  "The keys' cache type, as llama.cpp's --cache-type-k (f32, f16, bf16, q8_0, "
                  "q4_0, q4_1, q5_0, q5_1, iq4_nl); the values keep --kv's");
  verb.add_option("--kv-v", kv_v,
                  "The values' cache type, as llama.cpp's --cache-type-v; the keys keep --kv's");
  verb.add_option("--kv-start", kv_start,
                  "With --kv affine:... or turbo:...: the cache stays full precision until a step "
                  "ends with it holding at least N positions, then is quantized in place "
                  "(mlx-lm's quantized_kv_start; default 5000 for affine, 0 for turbo: quantized "
                  "from the first step's end)")
      ->check(CLI::NonNegativeNumber);
  verb.add_option("--chunk", chunk, "Prefill chunk size in positions (default 512)")
      ->check(CLI::PositiveNumber);
}

RuntimeOptions EngineFlags::Options(std::string_view model) const {
  RuntimeOptions options;
  options.compute = ParseComputeMode(compute);
  if (kv == "config") {  // the model directory's own kv_config.json
    const std::filesystem::path file = std::filesystem::path(model) / "kv_config.json";
    if (model.empty() || !std::filesystem::is_regular_file(file)) {
      Fail("cli",
           "--kv config reads the model directory's kv_config.json, and {} (give --kv "
           "config:FILE)",
           model.empty() ? std::string("this verb names no model directory")
                         : fmt::format("there is no {}", file.string()));
    }
    options.kv = ReadKvConfig(file);
  } else {
    options.kv = ParseKvScheme(kv);
  }
  options.kv.start = kv_start.value_or(options.kv.start);  // the scheme's default otherwise
  if ((!kv_k.empty() || !kv_v.empty()) && options.kv.quantized()) {
    Fail("cli", "--kv-k / --kv-v set ggml or float cache types; --kv {} is a quantized scheme", kv);
  }
  if (!kv_k.empty()) options.kv.key_storage = ParseKvStorage(kv_k, "--kv-k");
  if (!kv_v.empty()) options.kv.value_storage = ParseKvStorage(kv_v, "--kv-v");
  if (chunk <= 0) Fail("cli", "--chunk must be positive (seen {})", chunk);
  return options;
}

}  // namespace proctor::cli
