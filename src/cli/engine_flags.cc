// Shared engine flags (see engine_flags.h).
#include "cli/engine_flags.h"

#include <charconv>

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

std::vector<int32_t> ParseTokenIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view item(text.data() + pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int32_t value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 0) {
      Fail("cli", "'{}' is not a non-negative token id (in \"{}\")", item, text);
    }
    ids.push_back(value);
    pos = end + 1;
  }
  return ids;
}

}  // namespace proctor::cli
