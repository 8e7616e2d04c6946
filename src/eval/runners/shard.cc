#include "eval/runners/shard.h"

#include <fmt/format.h>

#include <charconv>

#include "util/error.h"

namespace proctor {

std::string Shard::Name() const { return fmt::format("{}/{}", index, count); }

Shard ParseShard(std::string_view text, std::string_view flag) {
  const auto bad = [&](std::string_view why) {
    Fail("cli", "{} '{}': {} (I/N: shard I of N, 0 <= I < N, e.g. {} 0/4)", flag, text, why, flag);
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) bad("no '/'");
  const auto number = [&](std::string_view part) {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
      bad(fmt::format("'{}' is not a whole number", part));
    }
    return value;
  };
  const Shard shard{.index = number(text.substr(0, slash)),
                    .count = number(text.substr(slash + 1))};
  if (shard.count < 1) bad("N must be at least 1");
  if (shard.index < 0 || shard.index >= shard.count) bad("I must be in 0 .. N-1");
  return shard;
}

ItemRange ShardItems(const Shard& shard, int64_t total) {
  CHECK_MSG(shard.count >= 1 && shard.index >= 0 && shard.index < shard.count && total >= 0,
            "shard {} of {} items", shard.Name(), total);
  // floor(I * total / N) without overflow for any total a run can have (< 2^40 items).
  const auto boundary = [&](int64_t i) {
    return static_cast<int64_t>(static_cast<__int128>(i) * total / shard.count);
  };
  return {boundary(shard.index), boundary(shard.index + 1)};
}

}  // namespace proctor
