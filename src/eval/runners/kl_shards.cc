#include "eval/runners/kl_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "eval/formats/per_position.h"
#include "eval/runners/dump_floor.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kComponent = "merge";

// The per-position file a partial names: relative names are beside the partial.
fs::path PositionsFileOf(const fs::path& json_file, const nlohmann::json& shard) {
  const fs::path file = shard.at("per_position").at("file").get<std::string>();
  return file.is_absolute() ? file : json_file.parent_path() / file;
}

struct KlPartial {
  fs::path path{};
  nlohmann::json envelope{};
  Shard shard{};
  ItemRange seqs{};
  int64_t seqs_total = 0;
  int worst = 0;
  fs::path positions{};
  std::string positions_sha256{};
};

// A kl partial results file, read back and checked on its own; errors name the file.
KlPartial ReadKlPartial(const fs::path& path) {
  KlPartial p{.path = path, .envelope = ReadPartialEnvelope(path, "kl", kComponent)};
  const nlohmann::json& env = p.envelope;
  try {
    const nlohmann::json& shard = env.at("results").at("shard");
    p.shard = {.index = shard.at("index").get<int64_t>(),
               .count = shard.at("count").get<int64_t>()};
    p.seqs = {.first = shard.at("seqs").at(0).get<int64_t>(),
              .end = shard.at("seqs").at(1).get<int64_t>()};
    p.seqs_total = shard.at("seqs_total").get<int64_t>();
    p.worst = shard.at("worst").get<int>();
    p.positions = PositionsFileOf(path, shard);
    p.positions_sha256 = shard.at("per_position").at("sha256").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "'{}' is not a partial kl result: {}", path.string(), e.what());
  }
  CheckShardHolds(p.shard, p.seqs_total, p.seqs, "sequences", path.string(), kComponent);
  return p;
}

}  // namespace

fs::path KlShardPositionsPath(const fs::path& json_file) {
  return json_file.string() + ".positions";
}

nlohmann::ordered_json KlShardToJson(const KlEvalResult& result, int worst,
                                     const fs::path& per_position, const fs::path& json_file) {
  CHECK_MSG(result.shard.has_value(), "not a shard's result");
  const bool beside =
      fs::absolute(per_position).parent_path() == fs::absolute(json_file).parent_path();
  return {{"index", result.shard->index},
          {"count", result.shard->count},
          {"seqs", {result.shard_seqs.first, result.shard_seqs.end}},
          {"seqs_total", result.seqs_total},
          {"worst", worst},
          {"per_position",
           {{"file", beside ? per_position.filename().string() : per_position.string()},
            {"sha256", Sha256FileHex(per_position)}}}};
}

bool KlShardDone(const fs::path& json_file, const Shard& shard, const nlohmann::json& settings,
                 const std::string& candidate, const std::string& reference,
                 const std::string& label) {
  if (!fs::exists(json_file)) return false;
  // Anything that is not a sound partial of this shard (another file, a damaged one) is not
  // done: it is scored again and replaced.
  try {
    const KlPartial p = ReadKlPartial(json_file);
    const nlohmann::json& results = p.envelope.at("results");
    return p.shard == shard && SettingsHold(p.envelope.at("settings"), settings) &&
           results.at("candidate").get<std::string>() == candidate &&
           results.at("reference").at("path").get<std::string>() == reference &&
           results.at("label").get<std::string>() == label && fs::exists(p.positions) &&
           Sha256FileHex(p.positions) == p.positions_sha256;
  } catch (const Error&) {
    return false;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

KlMerge MergeKlPartials(const std::vector<fs::path>& partials) {
  if (partials.empty()) Fail(kComponent, "no partial results given");
  std::vector<KlPartial> parts;
  std::vector<ShardPart> shards;
  parts.reserve(partials.size());
  shards.reserve(partials.size());
  for (const fs::path& path : partials) {
    parts.push_back(ReadKlPartial(path));
    const KlPartial& p = parts.back();
    const KlPartial& first = parts.front();
    const auto differs = [&](std::string_view what, const std::string& how) {
      Fail(kComponent, "'{}' is from another run than '{}': {} {}", p.path.string(),
           first.path.string(), what, how);
    };
    CheckSameRun(p.envelope, p.path.string(), first.envelope, first.path.string());
    for (const char* key : {"candidate", "reference"}) {
      const nlohmann::json& a = p.envelope["results"].at(key);
      const nlohmann::json& b = first.envelope["results"].at(key);
      if (a != b) differs(key, fmt::format("{} vs {}", a.dump(), b.dump()));
    }
    if (p.seqs_total != first.seqs_total) {
      differs("sequences", fmt::format("{} vs {}", p.seqs_total, first.seqs_total));
    }
    if (p.worst != first.worst) differs("--worst", fmt::format("{} vs {}", p.worst, first.worst));
    shards.push_back({.shard = p.shard, .name = path.string()});
  }
  std::vector<const KlPartial*> by_index;
  by_index.reserve(parts.size());
  for (const size_t i : OrderShardParts(shards)) by_index.push_back(&parts[i]);

  const KlPartial& first = *by_index.front();
  KlMerge merge;
  KlEvalResult& m = merge.result;
  m = KlEvalResultFromJson(first.envelope.at("results"), first.path.string());
  m.sequence_mean_kl.clear();
  m.sequence_top1.clear();
  m.sequence_mean_nll.clear();
  // Every sequence's per-position scores, in run order.
  std::vector<std::vector<PositionScore>> scores;
  double elapsed = 0;
  double reference_forward_seconds = 0;
  for (const KlPartial* p : by_index) {
    if (!fs::exists(p->positions)) {
      Fail(kComponent, "'{}' names the per-position file '{}', which does not exist",
           p->path.string(), p->positions.string());
    }
    const std::string sha = Sha256FileHex(p->positions);
    if (sha != p->positions_sha256) {
      Fail(kComponent, "'{}' changed after '{}' was written: sha256 {}, the partial says {}",
           p->positions.string(), p->path.string(), sha, p->positions_sha256);
    }
    const PerPositionFile file = ReadPerPositionFile(p->positions);
    const auto positions = static_cast<uint64_t>(m.positions_per_seq);
    if (file.header.n_seqs != static_cast<uint64_t>(p->seqs.size()) ||
        (p->seqs.size() > 0 && file.header.positions_per_seq != positions) ||
        file.records.size() != file.header.n_seqs * positions) {
      Fail(kComponent,
           "'{}' holds {} records of {} sequences x {} positions; shard {} scores {} x {}",
           p->positions.string(), file.records.size(), file.header.n_seqs,
           file.header.positions_per_seq, p->shard.Name(), p->seqs.size(), positions);
    }
    for (size_t i = 0; i < file.records.size(); ++i) {
      const PerPositionRecord& r = file.records[i];
      if (r.seq != i / positions || r.position != i % positions) {
        Fail(kComponent, "'{}': record {} is sequence {} position {}; {} and {} expected",
             p->positions.string(), i, r.seq, r.position, i / positions, i % positions);
      }
      if (r.position == 0) scores.emplace_back();
      scores.back().push_back(r.score);
    }
    m.timings += ResultsTimingsFromJson(p->envelope.at("timings"));
    elapsed += p->envelope["results"].at("elapsed_seconds").get<double>();
    reference_forward_seconds += p->envelope["results"].value("reference_forward_seconds", 0.0);
    m.candidate_vocab =
        std::max(m.candidate_vocab, p->envelope["results"].at("candidate_vocab").get<int64_t>());
  }
  const ResultsTimings timings = m.timings;
  FinishKlRun({}, {}, scores, MonotonicSeconds(), first.worst, &m);
  m.timings = timings;
  m.reference_forward_seconds = reference_forward_seconds;
  m.stats.elapsed_seconds = elapsed;
  m.stats.positions_per_second = elapsed > 0 ? static_cast<double>(m.stats.positions) / elapsed : 0;
  m.warnings = first.envelope.at("warnings").get<std::vector<std::string>>();

  merge.envelope = ResultsEnvelope{.command = "kl", .threads = m.threads};
  const InputsAndSettings in_file_order = ReadInFileOrder(first.path);
  merge.envelope.inputs = in_file_order.inputs;
  merge.envelope.settings = in_file_order.settings;
  merge.envelope.results = KlEvalResultToJson(m);
  merge.envelope.timings = m.timings;
  merge.envelope.warnings = m.warnings;
  // A dump with a floor: the candidate paired against it sequence by sequence, as the unsharded
  // run's file has it (a shard's sequences cannot be paired on their own). A resident reference
  // has no floor.
  if (m.mode != "saved-teacher") return merge;
  if (!fs::is_directory(m.reference)) {
    Fail(kComponent,
         "the partials were scored against the dump '{}', which the merge reads for "
         "its floor: it is not there",
         m.reference);
  }
  std::string why;
  if (const std::optional<KlEvalResult> floor = ReadDumpFloor(m.reference, &why)) {
    merge.envelope.results["floor"] = FloorComparisonToJson(*floor, m, m.reference);
  }
  return merge;
}

}  // namespace proctor
