// A teacher dump in shards (`proctor dump --shard I/N`) and their merge (`proctor merge OUT
// DIR...`) into the dump directory the unsharded run writes (docs/scale-out.md).
//
// Shard I of N dumps its share of the corpus' sequences (eval/runners/shard.h) as a dump of its
// own, a slice (TeacherDumpOptions seq_start/seq_end), then writes DIR/shard.json last: which
// share, the run's identity (teacher, corpus, top-k, chunk, compute, KV, floor) and the sha256
// of the manifest it finished with. With the floor on, it also keeps its per-position floor
// scores (DIR/floor-positions.bin, the per-position format) for the merge. A shard whose
// shard.json is there is done: rerun, it is not dumped again; an interrupted one resumes from its
// last whole sequence (the dump's own resume). A shard with no sequences (N above the corpus'
// sequences) writes only its shard.json.
//
// The merge links (or copies) the sequence files under their corpus numbers, concatenates
// tokens.bin, writes the whole run's manifest (the first shard's `created`) and the floor of all
// positions: the directory is the unsharded dump's byte for byte, floor.json included, when the
// shards' `created` is the unsharded run's and the directory has its path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "eval/runners/kl_eval.h"
#include "eval/runners/shard.h"
#include "eval/runners/teacher_dump.h"

namespace proctor {

inline constexpr const char* kDumpShardFile = "shard.json";
inline constexpr const char* kDumpShardFloorFile = "floor-positions.bin";

struct DumpShardResult {
  Shard shard{};
  ItemRange seqs{};  // the corpus sequences this shard holds
  int64_t n_seqs_total = 0;
  bool already_done = false;                // shard.json was there: nothing was run
  std::optional<TeacherDumpResult> dump{};  // the slice's dump (none when empty or already done)
};

// Dumps shard `shard` of the run `options` (whose seq_start/seq_end must be the defaults and
// whose resume is implied) into options.out_dir. Errors: "[dump] ..." naming the directory and
// the values when it holds another shard or run, or a complete dump without its shard.json.
DumpShardResult DumpTeacherShard(TeacherDumpOptions options, const Shard& shard);

struct DumpMergeResult {
  int64_t shards = 0;
  int64_t n_seqs = 0;
  int64_t positions = 0;                // records in the merged dump
  uint64_t bytes_linked = 0;            // sequence files hard-linked from the shards
  uint64_t bytes_copied = 0;            // written: copies (other file system), tokens.bin, manifest
  std::optional<KlEvalResult> floor{};  // when the shards kept theirs
};

// Merges the shard directories (any order; every shard 0..N-1 of one run exactly once) into
// `out_dir` (absent or empty). Refuses, naming the directory and the values, and writing nothing:
// a directory that is not a finished dump shard, shards of another run or shard count, a shard
// missing or given twice, a shard dump changed since it finished.
DumpMergeResult MergeDumpShards(const std::filesystem::path& out_dir,
                                const std::vector<std::filesystem::path>& shard_dirs);

}  // namespace proctor
