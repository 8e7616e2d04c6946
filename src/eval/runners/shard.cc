#include "eval/runners/shard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"

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

std::vector<size_t> OrderShardParts(const std::vector<ShardPart>& parts) {
  if (parts.empty()) Fail("merge", "no partial results given");
  const ShardPart& first = parts.front();
  const int64_t count = first.shard.count;
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> order(static_cast<size_t>(count), kNone);
  for (size_t i = 0; i < parts.size(); ++i) {
    const ShardPart& part = parts[i];
    if (part.shard.count != count) {
      Fail("merge", "'{}' is shard {} but '{}' is shard {}: one run has one shard count", part.name,
           part.shard.Name(), first.name, first.shard.Name());
    }
    size_t& slot = order[static_cast<size_t>(part.shard.index)];
    if (slot != kNone) {
      Fail("merge", "shard {} is given twice: '{}' and '{}'", part.shard.Name(), parts[slot].name,
           part.name);
    }
    slot = i;
  }
  std::vector<std::string> missing;
  for (int64_t i = 0; i < count; ++i) {
    if (order[static_cast<size_t>(i)] == kNone) missing.push_back(Shard{i, count}.Name());
  }
  if (!missing.empty()) {
    Fail("merge", "shard(s) {} missing: {} of {} given", fmt::join(missing, ", "), parts.size(),
         count);
  }
  return order;
}

void CheckShardHolds(const Shard& shard, int64_t total, const ItemRange& held,
                     std::string_view items, const std::string& file, std::string_view component) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count || total < 0) {
    Fail(component, "'{}' names shard {}/{} of {} {}: not a shard", file, shard.index, shard.count,
         total, items);
  }
  const ItemRange expected = ShardItems(shard, total);
  if (held.first != expected.first || held.end != expected.end) {
    Fail(component, "'{}' says shard {} holds {} [{}, {}); shard {} of {} {} is [{}, {})", file,
         shard.Name(), items, held.first, held.end, shard.Name(), total, items, expected.first,
         expected.end);
  }
}

nlohmann::json ReadPartialEnvelope(const std::filesystem::path& path, std::string_view verb,
                                   std::string_view component) {
  nlohmann::json env = ReadJsonFile(path, component);
  if (!env.is_object() || env.value("command", "") != verb || !env.contains("results") ||
      !env["results"].contains("shard")) {
    Fail(component,
         "'{}' is not a partial {} result (a results file of `proctor {} --shard I/N --json "
         "FILE`: command \"{}\" with results.shard)",
         path.string(), verb, verb, verb);
  }
  return env;
}

bool SettingsHold(const nlohmann::json& written, const nlohmann::json& settings) {
  for (const auto& [key, value] : settings.items()) {
    if (!written.contains(key) || written.at(key) != value) return false;
  }
  return true;
}

InputsAndSettings ReadInFileOrder(const std::filesystem::path& path) {
  try {
    const auto file = nlohmann::ordered_json::parse(ReadFileToString(path));
    return {.inputs = file.at("inputs"), .settings = file.at("settings")};
  } catch (const nlohmann::json::exception& e) {
    Fail("merge", "'{}' has no readable 'inputs' and 'settings': {}", path.string(), e.what());
  }
}

std::string FirstDifferingKey(const nlohmann::json& a, const nlohmann::json& b) {
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key) || b.at(key) != value) {
      return fmt::format("{}: {} vs {}", key, value.dump(),
                         b.contains(key) ? b.at(key).dump() : "(absent)");
    }
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) return fmt::format("{}: (absent) vs {}", key, value.dump());
  }
  return "";
}

void CheckSameRun(const nlohmann::json& partial, const std::string& file,
                  const nlohmann::json& first, const std::string& first_file) {
  const std::string setting = FirstDifferingKey(partial.at("settings"), first.at("settings"));
  if (!setting.empty()) {
    Fail("merge", "'{}' is from another run than '{}': setting {}", file, first_file, setting);
  }
  if (partial.contains("inputs") && first.contains("inputs") &&
      partial.at("inputs") != first.at("inputs")) {
    Fail("merge", "'{}' is from another run than '{}': inputs {} vs {}", file, first_file,
         partial.at("inputs").dump(), first.at("inputs").dump());
  }
}

ItemRange ItemsOf(const std::optional<Shard>& shard, int64_t total) {
  return shard ? ShardItems(*shard, total) : ItemRange{.first = 0, .end = total};
}

}  // namespace proctor
