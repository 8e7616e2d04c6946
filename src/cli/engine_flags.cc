// Shared engine flags (see engine_flags.h).
#include "cli/engine_flags.h"

#include "util/error.h"

namespace proctor::cli {

void EngineFlags::Add(CLI::App& verb) {
  verb.add_option("--compute", compute,
                  "How activations enter matrix products: f32 (default: activations and "
                  "accumulation in f32, exact for the stored weights), bf16 (activations rounded "
                  "to bf16; faster with bf16 weights) or q8 (activations quantized to 8 bits per "
                  "32 values before products with GGUF block weights, as llama.cpp does; integer "
                  "dot products, faster decode). What a mode costs: proctor kl --self "
                  "compute=f32:q8")
      ->check(CLI::IsMember({"f32", "bf16", "q8"}));
  verb.add_option("--kv", kv,
                  "KV cache scheme: f32 (default), bf16, f16, ggml:TYPE (llama.cpp's cache types "
                  "q8_0, q4_0, q4_1, q5_0, q5_1; ggml:KTYPE/VTYPE for keys and values apart), or "
                  "affine:BITS[:gGROUP] (mlx-lm's quantized KV cache: bits 2, 3, 4, 5, 6, 8; "
                  "group g32, g64 (default), g128 along each head), e.g. --kv affine:4:g64");
  verb.add_option("--kv-k", kv_k,
                  "The keys' cache type, as llama.cpp's --cache-type-k (f32, f16, bf16, q8_0, "
                  "q4_0, q4_1, q5_0, q5_1); the values keep --kv's");
  verb.add_option("--kv-v", kv_v,
                  "The values' cache type, as llama.cpp's --cache-type-v; the keys keep --kv's");
  verb.add_option("--kv-start", kv_start,
                  "With --kv affine:...: the cache stays full precision until a step ends with it "
                  "holding at least N positions, then is quantized in place (mlx-lm's "
                  "quantized_kv_start; default 5000)")
      ->check(CLI::NonNegativeNumber);
  verb.add_option("--chunk", chunk, "Prefill chunk size in positions (default 512)")
      ->check(CLI::PositiveNumber);
}

RuntimeOptions EngineFlags::Options() const {
  RuntimeOptions options;
  options.compute = ParseComputeMode(compute);
  options.kv = ParseKvScheme(kv);
  options.kv.start = kv_start;
  if ((!kv_k.empty() || !kv_v.empty()) && options.kv.quantized()) {
    Fail("cli", "--kv-k / --kv-v set ggml or float cache types; --kv {} is an affine scheme", kv);
  }
  if (!kv_k.empty()) options.kv.key_storage = ParseKvStorage(kv_k, "--kv-k");
  if (!kv_v.empty()) options.kv.value_storage = ParseKvStorage(kv_v, "--kv-v");
  if (chunk <= 0) Fail("cli", "--chunk must be positive (seen {})", chunk);
  return options;
}

}  // namespace proctor::cli
