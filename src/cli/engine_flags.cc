// Shared engine flags (see engine_flags.h).
#include "cli/engine_flags.h"

#include "util/error.h"

namespace proctor::cli {

void EngineFlags::Add(CLI::App& verb) {
  verb.add_option("--compute", compute,
                  "f32 (default: activations and accumulation in f32, exact for the stored "
                  "weights) or bf16 (activations rounded to bf16 inside matrix products; faster)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  verb.add_option("--kv", kv,
                  "KV cache scheme: f32 (default), bf16, f16, or affine:BITS[:gGROUP] (mlx-lm's "
                  "quantized KV cache: bits 2, 3, 4, 5, 6, 8; group g32, g64 (default), g128 "
                  "along each head), e.g. --kv affine:4:g64");
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
  if (chunk <= 0) Fail("cli", "--chunk must be positive (seen {})", chunk);
  return options;
}

}  // namespace proctor::cli
