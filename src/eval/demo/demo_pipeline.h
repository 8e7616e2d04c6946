// `proctor demo`: `proctor compare` (eval/compare/compare_pipeline.h) on an embedded default, so
// the whole core loop runs in seconds with no downloads:
//
//   teacher     the generated demo teacher (eval/demo/demo_teacher.h) written into
//               work_dir/teacher, or the model given;
//   data        the project's documentation (eval/demo/demo_texts.h), BOS before each file,
//               concatenated, cut into n_seqs x ctx_len (fewer sequences when the texts run out);
//   candidates  the teacher quantized with MLX affine quantization at each of `bits`
//               (affine<bits>-g<group_size>).
//
// The result is compare's: one row per model, FormatCompareTable prints it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "eval/compare/compare_pipeline.h"
#include "model/runtime_model.h"

namespace proctor {

struct DemoOptions {
  std::filesystem::path work_dir{};  // created; teacher/ and compare's directories go here
  std::string model{};               // empty: generate the demo teacher
  std::vector<int> bits{8, 4, 3};    // one MLX affine candidate per entry
  int group_size = 64;
  int64_t n_seqs = 16;  // fewer when the texts run out (at least one sequence)
  int64_t ctx_len = 256;
  int64_t top_k = 256;  // logits kept per position in the dump
  int64_t chunk_size = 512;
  RuntimeOptions runtime{};
  bool quiet = true;                              // progress bars of dump and scoring on stderr
  std::function<void(const std::string&)> log{};  // one line per finished step (may be empty)
};

// The compare options a demo runs (the teacher generated first when none is given).
CompareOptions DemoCompareOptions(const DemoOptions& options, const std::string& teacher);

struct DemoResult {
  CompareResult compare;
  bool generated_teacher = false;
  double teacher_seconds = 0;  // generating the teacher
};

// Errors: Error("[demo] ...") for bad options; compare's errors.
DemoResult RunDemo(const DemoOptions& options);

}  // namespace proctor
