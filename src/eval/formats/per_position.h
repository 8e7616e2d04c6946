// The per-position scores file `proctor kl --per-position FILE` writes (docs/formats.md,
// "Per-position scores"): a 64-byte little-endian header and one 72-byte record per scored
// position (version 2), in (sequence, position) order, so runs can be compared position by
// position or merged (every run statistic, `where` included, is recomputable from the records:
// the values are float64). Version 1 files (64-byte records without the teacher's top-1
// probability, which reads back as NaN) are still read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "eval/scoring/kl_stats.h"

namespace proctor {

inline constexpr char kPerPositionMagic[8] = {'P', 'R', 'O', 'C', 'K', 'L', 'P', 'P'};
inline constexpr uint32_t kPerPositionVersion = 2;
inline constexpr uint32_t kPerPositionHeaderBytes = 64;
inline constexpr uint32_t kPerPositionRecordBytes = 72;
inline constexpr uint32_t kPerPositionV1RecordBytes = 64;
// Header flag: the KL is over the full vocabulary (two-model mode), not a teacher's top-k.
inline constexpr uint32_t kPerPositionFullVocabulary = 1;

struct PerPositionHeader {
  uint32_t flags = 0;
  uint64_t record_count = 0;
  uint64_t n_seqs = 0;             // sequences scored
  uint64_t positions_per_seq = 0;  // scored positions per sequence
  uint64_t top_k = 0;              // the teacher's top-k (0 with kPerPositionFullVocabulary)
  uint64_t vocab = 0;              // the candidate's vocabulary
};

struct PerPositionRecord {
  uint32_t seq = 0;
  uint32_t position = 0;
  PositionScore score;
};

// Writes the header and per_sequence[s][p] as record (s, p), atomically (temp + rename).
// header.record_count and n_seqs are filled in from per_sequence.
void WritePerPositionFile(const std::filesystem::path& path, PerPositionHeader header,
                          const std::vector<std::vector<PositionScore>>& per_sequence);

struct PerPositionFile {
  PerPositionHeader header;
  std::vector<PerPositionRecord> records;
};

// Reads and validates a whole file: magic, version (1 or 2), header and record sizes, the
// file size against record_count, reserved bytes zero. Error("[per-position] ...") names the
// file and the values seen and expected.
PerPositionFile ReadPerPositionFile(const std::filesystem::path& path);
// The same checks on the file's bytes (`path` only names the file in errors).
PerPositionFile ParsePerPositionFile(std::string_view bytes, const std::filesystem::path& path);

}  // namespace proctor
