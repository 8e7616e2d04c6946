// A KL run in shards (`proctor kl ... --shard I/N --json FILE`: a saved teacher, two models, a
// KV arm, a self A/B, the decode path over a corpus or prompts) and their merge (`proctor merge
// OUT PART...`) into the unsharded run's results file (docs/scale-out.md).
//
// Shard I of N scores its share of the run's sequences (the dump's or corpus', or its first
// --n-seqs; the prompts scored): the results envelope over them with results.shard (which
// shard, its sequences, the worst positions kept, and the per-position scores file beside it,
// FILE.positions by default, with its sha256). The merge reads every shard's per-position scores
// back (float64, exact) and computes every statistic from all of them as the unsharded run does:
// the same numbers to the last bit, `where` with the sequences under their run numbers, a saved
// teacher's floor pairing too.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/runners/kl_eval.h"
#include "eval/runners/results_json.h"

namespace proctor {

// Where a shard keeps its per-position scores unless --per-position says: FILE.positions.
std::filesystem::path KlShardPositionsPath(const std::filesystem::path& json_file);

// results.shard of a shard's run: index, count, seqs [first, end), seqs_total, worst, and
// per_position {file (relative to the results file's directory when beside it), sha256}.
nlohmann::ordered_json KlShardToJson(const KlEvalResult& result, int worst,
                                     const std::filesystem::path& per_position,
                                     const std::filesystem::path& json_file);

// True when `json_file` already holds the partial of this shard of this run with its
// per-position file intact: every key of `settings` (what the rerun knows before it reads its
// inputs) as the partial has it, and the same results candidate, reference path (the dump, or
// the reference model's spec) and label (which names the dump, corpus or prompts file). A rerun
// keeps it.
bool KlShardDone(const std::filesystem::path& json_file, const Shard& shard,
                 const nlohmann::json& settings, const std::string& candidate,
                 const std::string& reference, const std::string& label);

struct KlMerge {
  ResultsEnvelope envelope;  // the unsharded run's results file
  KlEvalResult result;
};

// Merges the partial results files (any order; every shard 0..N-1 of one run exactly once).
// Refuses, naming the file and the values: not a kl partial, truncated, another run (a setting,
// the candidate, the dump, the inputs' sha256), another shard count, a shard missing or given
// twice, a per-position file missing or changed.
KlMerge MergeKlPartials(const std::vector<std::filesystem::path>& partials);

}  // namespace proctor
