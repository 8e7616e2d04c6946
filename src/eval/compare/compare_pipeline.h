// `proctor compare`: a quantization study in one command, and `proctor demo`, which is compare on
// the embedded default (eval/demo/demo_pipeline.h). Four steps, each kept in the output directory:
//
//   1. corpus    out/corpus: the user's data (text, jsonl and chat rows, exactly as `proctor
//                corpus` builds it) or embedded texts (BOS before each, concatenated in order),
//                tokenized with the teacher's tokenizer into n_seqs x ctx_len tokens;
//   2. dump      out/dump: the teacher's top-k reference logits over the corpus (`proctor dump`);
//   3. quantize  out/candidates/<spec>: each QuantizeSpec applied to the teacher (`proctor
//                quantize`);
//   4. score     the teacher itself (the fp16 storage floor), every given candidate and every
//                quantized one against the dump (`proctor kl`), each with the perplexity of the
//                same forward pass (`proctor ppl` on the corpus: every position with a next
//                token, float64 NLL, mlx_lm's standard error).
//
// Resuming: every step records in out/steps/ a key made of the sha256 of what went into it (data
// files, teacher files, corpus tokens, candidate files) and the settings that change its result.
// A rerun reuses each step whose recorded key matches (a dump cut short continues where it
// stopped) and redoes the rest, so rerunning an interrupted command continues it and the
// statistics are the ones an uninterrupted run gives, bit for bit (for the same thread count).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/demo/demo_texts.h"
#include "eval/runners/kl_eval.h"
#include "eval/runners/ppl.h"
#include "eval/runners/results_json.h"
#include "eval/runners/teacher_dump.h"
#include "model/runtime_model.h"

namespace proctor {

struct CompareOptions {
  std::filesystem::path out_dir{};  // created; corpus/, dump/, candidates/, steps/ go here
  std::string teacher{};            // directory, .gguf or cached HF id
  std::string teacher_note{};       // shown under the teacher (the demo's generated one)
  // The corpus: the user's files (.txt, .jsonl; as `proctor corpus`, rows shuffled with `seed`),
  // or embedded texts (`texts_label` names them) when `data` is empty.
  std::vector<std::filesystem::path> data{};
  uint32_t seed = 123;
  std::vector<EmbeddedText> texts{};
  std::string texts_label{};
  // Embedded texts only: fewer sequences when they run out (at least one).
  bool fit_n_seqs_to_texts = false;
  std::vector<std::string> candidates{};  // models to score: directory, .gguf or cached HF id
  std::vector<std::string> quantize{};    // QuantizeSpec spellings (model/quantize_spec.h)
  // KV cache schemes (--kv spellings) run on the teacher as `proctor kv-curve` does over the
  // study's corpus (its n_seqs sequences, the last kv_decode_steps positions of each decoded);
  // empty: none.
  std::vector<std::string> kv_schemes{};
  int64_t kv_decode_steps = 32;
  int64_t n_seqs = 32;
  int64_t ctx_len = 512;
  int64_t top_k = 256;  // logits kept per position in the dump
  int64_t chunk_size = 512;
  RuntimeOptions runtime{};                       // every model's engine settings (compute, kv)
  bool quiet = true;                              // progress bars of the dump and scoring on stderr
  std::function<void(const std::string&)> log{};  // one line per finished step (may be empty)
};

struct CompareRow {
  std::string candidate;       // "teacher (bf16)", "affine4-g64", or the model as given
  std::string kind;            // "teacher", "model" (given) or "quantized"
  std::string model;           // what was scored: the teacher, the model given, the quantized dir
  double bits_per_weight = 0;  // 8 x stored bytes / the teacher's parameter count
  nlohmann::ordered_json kl;   // KlEvalResultToJson of the scoring pass
  PerplexityStats perplexity;  // of the same pass, over the corpus
  double prepare_seconds = 0;  // quantization (0 otherwise)
  double seconds = 0;          // the scoring pass: forward + KL + NLL
  bool reused = false;         // taken from an earlier run of the same command
  std::string per_position;    // its per-position scores (kl --per-position's file), relative
                               // to the study directory: "positions/<step>.kl"
};

struct CompareResult {
  std::string teacher;
  std::string teacher_summary;
  std::string teacher_sha256;
  nlohmann::ordered_json teacher_description;  // EvalModel::Describe("teacher"): files, sha256
  std::string tokenizer;                       // Describe() of the teacher's tokenizer
  std::string corpus_description;
  std::filesystem::path out_dir, corpus_dir, dump_dir;
  std::string corpus_sha256;
  int64_t n_seqs = 0, ctx_len = 0, top_k = 0, chunk_size = 0;
  std::string compute, kv;
  int threads = 0;
  bool corpus_reused = false, dump_reused = false;
  TeacherDumpResult dump;  // of this run (empty counts when reused)
  double teacher_parameters = 0;
  std::vector<CompareRow> rows;  // the teacher first, then by bits per weight, most first
  // With kv_schemes: the kv-curve results ({"sequences", "ctx_len", "rows"}, docs/results-json.md)
  // and their table; null and empty otherwise.
  nlohmann::ordered_json kv_curve;
  std::string kv_curve_table;
  double corpus_seconds = 0;
  double total_seconds = 0;
};

// Errors: Error("[compare] ...") for bad options (checked before anything is created), data that
// gives too few tokens, a candidate whose vocabulary differs from the teacher's; the errors of the
// steps it runs.
CompareResult RunCompare(const CompareOptions& options);

// Every statistic: {"out_dir", "teacher", "corpus", "dump", "candidates": [{"candidate", "kind",
// "model", "bits_per_weight", "kl": KlEvalResultToJson, "perplexity", "delta_perplexity",
// "prepare_seconds", "seconds", "per_position", "reused"}], "settings", "timings"}.
nlohmann::ordered_json CompareResultToJson(const CompareResult& result);
// Back from that JSON (what `proctor report` reads): the teacher, corpus, dump, settings and
// rows; `source` names the file in errors (a missing key says which).
CompareResult CompareResultFromJson(const nlohmann::ordered_json& results,
                                    const std::string& source);

// The results-JSON envelope (docs/results-json.md) of a run: command `command` ("compare" or
// "demo"), the teacher and the data as inputs, the settings, CompareResultToJson, the timings
// of the dump (when this run dumped), the corpus, the dump and the quantized candidates as
// outputs.
ResultsEnvelope CompareResultsEnvelope(const CompareResult& result, const CompareOptions& options,
                                       const std::string& command);

}  // namespace proctor
