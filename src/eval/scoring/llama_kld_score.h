// Scoring a candidate against a llama.cpp base file under llama.cpp's own conventions
// (tools/perplexity/perplexity.cpp, kl_divergence; docs/llama-cpp-interop.md):
//
//   per position, with the candidate's float logits l and the record's base log-probs
//   b_i = scale * code_i + min_log_prob (float; NOT renormalised):
//     nll      = max(l) + log_sum_exp - l[tok]            (float; log_sum_exp as in the writer)
//     nll_base = -b[tok]
//     KLD      = sum over i with b_i > -16 of expf(b_i) * (b_i - l_i + max(l) + log_sum_exp)
//     same top = first argmax of l == first argmax of b
//     dp       = expf(-nll) - expf(-nll_base)            (candidate minus base probability)
//   and over the run the sums llama.cpp keeps, its mean +- uncertainty (sample standard error,
//   zero for 10 or fewer positions), its percentiles (linear interpolation in float on the
//   sorted values) and its PPL / ln(PPL ratio) / correlation formulas.
//
// Positions are scored independently (any thread) and summed in position order, so results do
// not depend on the thread count (llama.cpp's own sums are in thread order).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/formats/llama_kld.h"

namespace proctor {

// One scored position, the values llama.cpp accumulates (in its types).
struct LlamaPositionScore {
  float nll = 0;
  float nll_base = 0;
  double kld = 0;
  float p_diff = 0;
  bool same_top = false;
};

// Scores one position: candidate logits [n_vocab] (finite, else Error naming `where` and
// `position`) against a record, next token `token`.
LlamaPositionScore ScoreLlamaPosition(const float* logits, int64_t n_vocab,
                                      const LlamaKldRecordView& record, int32_t token,
                                      const std::string& where, int64_t position);

// llama.cpp's running sums (struct kl_divergence_result), in llama.cpp's accumulation types.
struct LlamaKlSums {
  double sum_nll = 0, sum_nll2 = 0;
  double sum_nll_base = 0, sum_nll_base2 = 0, sum_nll_nll_base = 0;
  double sum_kld = 0, sum_kld2 = 0;
  double sum_p_diff = 0, sum_p_diff2 = 0, sum_p_diff4 = 0;
  float max_p_diff = 0;
  int64_t n_same_top = 0;
  int64_t count = 0;

  void Add(const LlamaPositionScore& s);
};

struct ValueAndUncertainty {
  double value = 0;
  double uncertainty = 0;
};

// Every number llama-perplexity --kl-divergence prints at the end, same definitions.
struct LlamaKlStats {
  int64_t count = 0;
  ValueAndUncertainty ppl, ppl_base, ln_ppl_ratio, ppl_ratio, ppl_diff;
  double ln_ppl_correlation = 0;  // Cor(ln(PPL(Q)), ln(PPL(base))), a fraction
  ValueAndUncertainty kld;
  // KLD percentiles in llama.cpp's order: max, 99.9, 99, 95, 90, median, 10, 5, 1, 0.1, min.
  double kld_max = 0, kld_p999 = 0, kld_p99 = 0, kld_p95 = 0, kld_p90 = 0, kld_median = 0,
         kld_p10 = 0, kld_p5 = 0, kld_p1 = 0, kld_p01 = 0, kld_min = 0;
  ValueAndUncertainty p_diff;  // mean dp (a fraction; printed as %)
  // dp percentiles: max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min.
  double p_diff_max = 0, p_diff_p999 = 0, p_diff_p99 = 0, p_diff_p95 = 0, p_diff_p90 = 0,
         p_diff_p75 = 0, p_diff_median = 0, p_diff_p25 = 0, p_diff_p10 = 0, p_diff_p5 = 0,
         p_diff_p1 = 0, p_diff_p01 = 0, p_diff_min = 0;
  ValueAndUncertainty p_diff_rms;
  ValueAndUncertainty same_top;  // fraction of positions whose argmaxes agree
};

// llama.cpp's final statistics from the sums and the per-position KLD and dp values (sorted
// here). Requires count >= 1.
LlamaKlStats ComputeLlamaKlStats(const LlamaKlSums& sums, std::vector<float> kld_values,
                                 std::vector<float> p_diff_values);

// llama.cpp's mean_and_uncertainty: mean, and sqrt(var / (count - 1)) when var > 0 and
// count > 10 (else 0), var = sum2/count - mean^2.
ValueAndUncertainty LlamaMeanAndUncertainty(double sum, double sum2, int64_t count);
// llama.cpp's percentile lambda (float arithmetic) on ascending values.
float LlamaPercentile(const std::vector<float>& sorted, float fraction);

// The three blocks llama.cpp prints ("====== Perplexity statistics ======", KL divergence,
// token probability), same labels and number formats, so outputs can be compared line by line.
// `exact_base_ppl`, when given, adds a line with PPL(base) from exact logits.
std::string FormatLlamaKlStats(const LlamaKlStats& stats,
                               std::optional<ValueAndUncertainty> exact_base_ppl = std::nullopt);

}  // namespace proctor
