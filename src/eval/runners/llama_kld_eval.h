// llama.cpp interop for the KL loop: scoring a candidate against a llama.cpp base file (.kld,
// eval/formats/llama_kld.h) with llama.cpp's statistics, and writing such a file from a proctor
// corpus
// (`proctor dump --format llama.cpp`), so either tool can read the other's base.
//
// Both follow llama-perplexity's evaluation exactly: every chunk (corpus sequence) runs from an
// empty cache with its first token replaced by BOS when the model's vocabulary adds BOS, and the
// positions n_ctx/2 .. n_ctx-2 are the ones stored and scored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/runners/results_json.h"
#include "eval/runners/teacher_forced.h"
#include "eval/scoring/llama_kld_score.h"
#include "model/runtime_model.h"
#include "text/tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace proctor {

class EvalModel;  // eval/runners/eval_model.h

// chunk_start_token values: decide from the model's tokenizer (LlamaKldChunkStartToken), or keep
// every chunk's stored first token.
inline constexpr int32_t kChunkStartFromModel = -2;
inline constexpr int32_t kChunkStartKeep = -1;

// The token llama-perplexity puts at position 0 of every chunk for a model with this tokenizer:
// its BOS id when the vocabulary adds BOS (GGUF tokenizer.ggml.add_bos_token, or a
// tokenizer.json post-processor that adds it), else kChunkStartKeep (also for no tokenizer).
int32_t LlamaKldChunkStartToken(const text::Tokenizer* tokenizer);
// The same for an opened model; Error("[kl] ...") naming `role` and the model when it has no
// tokenizer to tell.
int32_t ChunkStartOf(const EvalModel& model, const std::string& role);

struct LlamaKldEvalOptions {
  std::filesystem::path base_file{};
  std::string candidate{};   // model path (or a display name with an injected forward)
  int64_t max_chunks = 0;    // score the first N chunks; 0 = all
  int64_t chunk_size = 512;  // positions per forward chunk
  int32_t chunk_start_token = kChunkStartFromModel;  // >= 0: that id at position 0 of a chunk
  TeacherForcedLogits forward{};  // empty: the engine's (EvalModel::Open(candidate))
  RuntimeOptions runtime{};
  ThreadPool* pool = nullptr;  // rows of a chunk are scored across it; null = Global()
  bool quiet = false;
  bool describe_inputs = false;  // fill LlamaKldEvalResult::inputs
};

struct LlamaKldEvalResult {
  std::filesystem::path base_file;
  std::string candidate;
  int64_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
  int64_t chunks_scored = 0;
  int32_t chunk_start_token = kChunkStartKeep;  // what was used
  int64_t chunk_size = 0;
  int threads = 0;
  LlamaKlSums sums;
  LlamaKlStats stats;  // PPL(base) here is from the file's quantized log-probs
  double elapsed_seconds = 0;
  ResultsTimings timings;  // forward / scoring / I/O (reading the file) / loading
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();  // with describe_inputs
};

// Errors: "[llama-kld] ..." from the reader; "[kl] ..." when the candidate's vocabulary differs
// from the file's n_vocab (naming both and the file), or its logits are not finite.
LlamaKldEvalResult EvaluateKlVsLlamaKld(const LlamaKldEvalOptions& options);

// A report in llama.cpp's layout (FormatLlamaKlStats) headed by what was compared.
std::string FormatLlamaKldReport(const LlamaKldEvalResult& result);
// Every statistic by name (values as fractions, not percent; [value, uncertainty] pairs).
nlohmann::ordered_json LlamaKlStatsToJson(const LlamaKlStats& stats);
// The results file of `proctor kl --reference-logits FILE.kld --json`.
ResultsEnvelope LlamaKldResultsEnvelope(const LlamaKldEvalResult& result,
                                        const LlamaKldEvalOptions& options);

struct LlamaKldDumpOptions {
  std::string teacher{};  // model spec
  std::filesystem::path corpus_dir{};
  std::filesystem::path out_file{};  // the .kld written (atomically)
  int64_t chunk_size = 512;
  int64_t seq_start = 0;  // corpus sequences [seq_start, seq_end) become the chunks
  int64_t seq_end = -1;   // -1 = all
  int32_t chunk_start_token = kChunkStartFromModel;
  TeacherForcedLogits forward{};  // empty: the engine's (EvalModel::Open(teacher))
  RuntimeOptions runtime{};
  ThreadPool* pool = nullptr;  // rows are encoded across it; null = Global()
  bool quiet = false;
  bool describe_inputs = false;  // fill LlamaKldDumpResult::inputs
};

struct LlamaKldDumpResult {
  int64_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
  int64_t positions = 0;  // records written
  int32_t chunk_start_token = kChunkStartKeep;
  // The teacher's perplexity over the stored positions, as llama-perplexity prints it while
  // writing a base ("Final estimate: PPL = v +/- u"): from the exact f32 logits ...
  ValueAndUncertainty exact_ppl;
  // ... and as a reader of the file sees it (llama.cpp's PPL(base): quantized, -16 clamped).
  ValueAndUncertainty stored_ppl;
  double elapsed_seconds = 0;
  ResultsTimings timings;  // forward / scoring (encoding) / I/O (corpus, file) / load
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();  // with describe_inputs
};

// Errors: "[dump] ..." for bad options and corpus/teacher mismatches (the corpus' vocab_size
// or token ids vs the teacher's vocabulary); "[corpus] ..." / "[llama-kld] ..." from the reader
// and writer.
LlamaKldDumpResult DumpTeacherLlamaKld(const LlamaKldDumpOptions& options);
// What `proctor dump --format llama.cpp` prints: the file written and the teacher's perplexity
// from its exact logits and as stored in the file.
std::string FormatLlamaKldDumpReport(const LlamaKldDumpResult& result,
                                     const LlamaKldDumpOptions& options);
// The results file of `proctor dump --format llama.cpp --json`.
ResultsEnvelope LlamaKldDumpResultsEnvelope(const LlamaKldDumpResult& result,
                                            const LlamaKldDumpOptions& options);

// Where a KL reference lives: a llama.cpp base file (a regular file named *.kld or starting with
// "_logits_") rather than a proctor dump directory.
bool IsLlamaKldReference(const std::filesystem::path& path);

}  // namespace proctor
