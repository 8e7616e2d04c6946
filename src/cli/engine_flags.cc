// Shared engine flags (see engine_flags.h).
#include "cli/engine_flags.h"

#include "util/error.h"

namespace proctor::cli {

void EngineFlags::Add(CLI::App& verb) {
  verb.add_option("--compute", compute,
                  "f32 (default: activations and accumulation in f32, exact for the stored "
                  "weights) or bf16 (activations rounded to bf16 inside matrix products; faster)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  verb.add_option("--kv", kv, "KV cache storage: f32 (default) or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}));
  verb.add_option("--chunk", chunk, "Prefill chunk size in positions (default 512)")
      ->check(CLI::PositiveNumber);
}

RuntimeOptions EngineFlags::Options() const {
  RuntimeOptions options;
  options.compute = ParseComputeMode(compute);
  options.kv = ParseKvScheme(kv);
  if (chunk <= 0) Fail("cli", "--chunk must be positive (seen {})", chunk);
  return options;
}

}  // namespace proctor::cli
