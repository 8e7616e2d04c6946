// A shard of a run: `--shard I/N` makes one of N batch jobs (a Slurm array task, a Kubernetes
// Indexed Job pod) do a fixed share of the work, and `proctor merge` puts the shares back
// together into exactly the unsharded result (docs/scale-out.md).
//
// Shard I of N (0 <= I < N, as SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX count) takes the
// contiguous items [floor(I * total / N), floor((I + 1) * total / N)): every item once, in order,
// the shares balanced to within one item (empty when N > total).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace proctor {

struct Shard {
  int64_t index = 0;
  int64_t count = 1;

  std::string Name() const;  // "I/N"
  bool operator==(const Shard&) const = default;
};

// "I/N" with 0 <= I < N and N >= 1; an error naming `flag` and the text otherwise.
Shard ParseShard(std::string_view text, std::string_view flag);

struct ItemRange {
  int64_t first = 0;
  int64_t end = 0;  // one past the last
  int64_t size() const { return end - first; }
};

// The items of `total` that `shard` takes.
ItemRange ShardItems(const Shard& shard, int64_t total);

// What a merge reads of each partial: its shard and the file or directory that holds it.
struct ShardPart {
  Shard shard;
  std::string name;
};

// The parts of one run in shard order (positions into `parts`): every shard 0 .. N-1 exactly
// once, else Error("[merge] ...") naming the files: another shard count than the first part's, a
// shard given twice, the shards missing.
std::vector<size_t> OrderShardParts(const std::vector<ShardPart>& parts);

// What a partial says of its shard, checked: 0 <= index < count, total >= 0, and `held` is
// exactly ShardItems(shard, total); else Error("[component] ...") naming `file`, the shard and
// the `items` ("rows", "sequences") it holds and should hold.
void CheckShardHolds(const Shard& shard, int64_t total, const ItemRange& held,
                     std::string_view items, const std::string& file, std::string_view component);

// A partial results file of `proctor VERB --shard I/N --json FILE`, read whole: its envelope,
// with "command" VERB and results.shard, else Error("[component] ...") naming the file.
nlohmann::json ReadPartialEnvelope(const std::filesystem::path& path, std::string_view verb,
                                   std::string_view component);

// Whether `written` (a partial's settings) has every key of `settings` with the same value: what
// a rerun knows of its run before it reads its inputs, against what a finished shard wrote.
bool SettingsHold(const nlohmann::json& written, const nlohmann::json& settings);

// The "inputs" and "settings" of a partial results file, their objects' keys in the file's order
// (ReadPartialEnvelope's come back sorted): what a merged results file keeps, so that it reads as
// the unsharded run's. One read of the file for both.
struct InputsAndSettings {
  nlohmann::ordered_json inputs, settings;
};
InputsAndSettings ReadInFileOrder(const std::filesystem::path& path);

// The first key of two JSON objects whose values differ (or that only one has), as
// "key: <a> vs <b>"; "" when they are equal.
std::string FirstDifferingKey(const nlohmann::json& a, const nlohmann::json& b);

// Error("[merge] '<file>' is from another run than '<first_file>': ...") unless the partial
// results envelope `partial` has `first`'s settings (naming the first that differs) and, when
// both list them, its inputs.
void CheckSameRun(const nlohmann::json& partial, const std::string& file,
                  const nlohmann::json& first, const std::string& first_file);

// The items of `total` a run takes: its shard's (ShardItems), or all when it is not sharded.
ItemRange ItemsOf(const std::optional<Shard>& shard, int64_t total);

}  // namespace proctor
