// `proctor dump`: runs a teacher model teacher-forced over a corpus and writes a
// reference-logits dump (format_version 1) of its top-k logits and full-vocabulary logsumexp.
//
// One KV cache per sequence, chunks of `chunk_size` positions (memory is bounded by the
// chunk's [C, V] logits); each chunk goes through ReferenceLogitsWriter::AppendLogitsRows (top-k
// with ties to the lower index, f32 logsumexp, records shifted by the top logit; rows across the
// global thread pool, one write per chunk, bytes independent of the thread count).
// A run can be resumed (finished sequences are kept; the result is byte-identical to an
// uninterrupted run), and a slice [seq_start, seq_end) of the corpus is a self-contained dump.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/runners/kl_eval.h"
#include "eval/runners/ppl.h"
#include "eval/runners/results_json.h"
#include "eval/runners/teacher_forced.h"
#include "model/runtime_model.h"

namespace proctor {

class EvalModel;  // eval/runners/eval_model.h

struct TeacherDumpOptions {
  std::string teacher{};  // model spec (directory, .gguf, cached HF id); manifest.model
  std::filesystem::path corpus_dir{};
  std::filesystem::path out_dir{};
  int64_t top_k = 2048;
  int64_t chunk_size = 512;
  int64_t seq_start = 0;  // first corpus sequence dumped
  int64_t seq_end = -1;   // one past the last; -1 = the corpus' n_seqs
  bool resume = false;    // continue an interrupted dump in out_dir
  std::string created{};  // manifest.created; empty: now (kept from the first run on resume)
  TeacherForcedLogits forward{};  // empty: the engine's (EvalModel::Open(teacher))
  RuntimeOptions runtime{};
  bool quiet = false;
  // Record the teacher's vocabulary in the manifest (vocab_size; tokenizer_sha256, bos_id,
  // eos_id when its tokenizer loads) and check it against what the corpus records.
  bool check_tokenizer = true;
  bool describe_inputs = false;  // fill TeacherDumpResult::inputs (hashes the inputs)
  // What the caller already has (compare): the teacher opened (used instead of opening it again)
  // and the sha256 of its files (recorded instead of hashing them again).
  std::shared_ptr<const EvalModel> opened{};
  std::string model_sha256{};
  // Score the teacher against each chunk's records as they are written and keep the result as
  // the dump's floor (eval/runners/dump_floor.h). Sequences kept from an interrupted run are run
  // through the teacher again for it (their records are read back, not rewritten).
  bool floor = true;
  // With `floor`, what a study's teacher row needs besides the floor, so that `compare` runs no
  // second teacher pass: the teacher's perplexity over the dumped positions
  // (TeacherDumpResult::floor_perplexity; NextTokenNll in float64, the numbers `proctor ppl`
  // gives) and the floor's per-position scores, written to `floor_per_position` (empty: not).
  bool floor_perplexity = false;
  std::filesystem::path floor_per_position{};
};

struct TeacherDumpResult {
  int64_t n_seqs = 0;              // sequences in the dump
  int64_t top_k = 0;               // as written: --top-k, or the teacher's vocabulary when smaller
  std::vector<std::string> notes;  // e.g. --top-k lowered to the vocabulary
  int64_t sequences_resumed = 0;   // already complete from an interrupted run
  int64_t positions_written = 0;   // records written by this run
  int64_t vocab = 0;               // the teacher's vocabulary (0 if nothing was run)
  double elapsed_seconds = 0;
  ResultsTimings timings;  // forward / scoring (top-k, logsumexp, the floor) / I/O split
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();  // with describe_inputs
  std::optional<KlEvalResult> floor;                // with options.floor: also in DIR/floor.json
  std::optional<PerplexityStats> floor_perplexity;  // with options.floor_perplexity
};

// Errors: Error("[dump] ...") for bad options, a corpus/teacher mismatch (vocabulary, token ids
// out of range, top_k above the vocabulary) or chunks that do not cover the sequence;
// "[corpus] ..." / "[ref-logits] ..." from the reader and writer.
TeacherDumpResult DumpTeacher(const TeacherDumpOptions& options);

// The results file of a dump (`proctor dump --json`): inputs, settings, counts, the timing
// split, and the dump directory written (its manifest and tokens hashed).
ResultsEnvelope DumpResultsEnvelope(const TeacherDumpResult& result,
                                    const TeacherDumpOptions& options);

}  // namespace proctor
