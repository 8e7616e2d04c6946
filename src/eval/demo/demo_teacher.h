// The teacher `proctor demo` builds for itself: a small Llama written as a real model directory
// (config.json, model.safetensors in bf16, tokenizer.json, tokenizer_config.json), generated
// deterministically from the project's own texts, so the demo needs no download.
//
// How it is made (all seeded; bit-identical for the same texts and options, whatever the thread
// count):
//   1. tokenizer: a byte-level BPE trained on the texts (text/tokenizer/bpe_trainer.h);
//   2. a bigram table of the tokenized texts, L[a][b] = log P(b | a) (seen pairs: count ratio
//      tilted by the unigram; unseen: a flat floor), centered per row and factored to rank
//      hidden_size by subspace iteration (L ~= Q B, Q orthonormal);
//   3. weights: the embedding of token a is Q[a] (scaled to rms ~1), lm_head is B^T, so with
//      quiet transformer layers the model predicts the bigram distribution (per-token
//      temperature set by the final RMSNorm); the layers are random (variance 1/fan_in) and add
//      context through o_proj / down_proj scaled by residual_scale.
// The result is not a trained LM, but its next-token distributions are structured (perplexity on
// the texts ~45, against 512 for a uniform guess), so KL, top-1 agreement and perplexity react to
// quantization as a real tiny model's do. Like stories260K, it is far more sensitive to
// quantization than a billion-parameter model (few dimensions to average rounding errors over,
// uncertain predictions): scored on the same text, its 8- and 4-bit numbers are close to
// stories260K's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace proctor {

struct DemoTeacherOptions {
  // Shape: a Llama a little larger than stories260K (dim 64, 5 layers, 8/4 heads, ff 172),
  // with every Linear input a multiple of 128 so every MLX group size applies.
  int hidden_size = 128;
  int num_layers = 6;
  int num_heads = 8;
  int num_kv_heads = 4;
  int intermediate_size = 384;
  int vocab_size = 512;
  int max_position_embeddings = 4096;
  uint64_t seed = 2024;
  float residual_scale = 0.15f;  // o_proj / down_proj amplitude relative to the 1/fan_in init
  float logit_scale = 1.0f;      // multiplies lm_head (1: the bigram's own sharpness)
  // log P(b | a) of pairs never seen is this (nats): a flat bulk under the seen next tokens.
  float log_prob_floor = -10.0f;
  // Weight of log P(b) (centered) added to the seen pairs' log P(b | a): separates next tokens
  // whose counts tie (common in a small corpus), so top-1 is not decided by rounding.
  float unigram_weight = 0.5f;
  int subspace_iterations = 3;
};

struct DemoTeacherInfo {
  std::filesystem::path dir;
  int64_t parameters = 0;        // every stored value
  int64_t tokenizer_vocab = 0;   // tokens the trained vocabulary has (<= vocab_size)
  int64_t training_tokens = 0;   // tokens the bigram table was counted over
  double bigram_perplexity = 0;  // of the smoothed bigram table on those tokens
  std::string summary;           // one line for the demo's output
};

// Writes the teacher into `dir` (created; existing files replaced). `texts` are the training
// texts, each encoded with BOS. Error when the texts are empty or the shape is invalid.
DemoTeacherInfo WriteDemoTeacher(const std::filesystem::path& dir,
                                 std::span<const std::string_view> texts,
                                 const DemoTeacherOptions& options = {});

}  // namespace proctor
