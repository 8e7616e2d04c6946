// A dump's storage floor: its teacher scored against its own records, which is the KL that
// storing the top-k logits in fp16 costs before any candidate is scored (docs/statistics.md, "The
// floor"). `proctor dump` scores each chunk as it writes it (no second forward) and keeps the
// result beside the dump in floor.json, a sidecar: the dump's format v1 is unchanged, and a dump
// without the file is still a dump. `proctor kl` shows it as the first row of its table.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/runners/kl_eval.h"

namespace proctor {

inline constexpr const char* kDumpFloorFile = "floor.json";

// What the floor of a dump is scored with besides the per-position scores.
struct DumpFloorRun {
  std::string teacher;  // the teacher's spec (the floor's candidate)
  int64_t top_k = 0;
  int64_t vocab = 0;  // the teacher's vocabulary
  int64_t chunk_size = 0;
  int threads = 0;
};

// The floor of the dump in `dump_dir` (its manifest written) from the teacher's scores against
// its records, [sequence][position] (FinishKlRun: the statistics, the per-sequence means, the 20
// worst positions; the per-position file when `per_position` is not empty). No time of its own:
// it is scored inside the dump, so its timings are zero and it is the same for the same scores.
KlEvalResult DumpFloorResult(const std::filesystem::path& dump_dir, const DumpFloorRun& run,
                             const std::vector<std::vector<PositionScore>>& scores,
                             const std::filesystem::path& per_position);

// One line for people: "floor (the teacher against its own dump): KL mean ..., top-1 ..., mass
// ..." with a newline.
std::string FormatDumpFloorLine(const KlEvalResult& floor);

// DIR/floor.json, atomically: {"proctor_dump_floor": 1, "manifest_sha256": the sha256 of
// DIR/manifest.json (written before), "floor": KlEvalResultToJson(floor)}.
void WriteDumpFloor(const std::filesystem::path& dump_dir, const KlEvalResult& floor);

// The floor of the dump in `dump_dir`, or nullopt with `why` set: the dump has no floor.json, or
// it was written for another manifest (the dump was rewritten). A floor.json that is not a floor
// file is an Error naming it.
std::optional<KlEvalResult> ReadDumpFloor(const std::filesystem::path& dump_dir, std::string* why);

// The candidate's per-sequence KL against the floor's, over the sequences both scored (the first
// ones: a candidate scored with --n N pairs with the floor's first N).
RowAgainstAbove CompareWithFloor(const KlEvalResult& floor, const KlEvalResult& candidate);

// `results.floor` of a kl run on a dump with a floor (docs/results-json.md): the floor's KL,
// top-1 and mass, its file, and CompareWithFloor's difference and verdict.
nlohmann::ordered_json FloorComparisonToJson(const KlEvalResult& floor,
                                             const KlEvalResult& candidate,
                                             const std::filesystem::path& dump_dir);

}  // namespace proctor
