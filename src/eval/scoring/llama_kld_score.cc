#include "eval/scoring/llama_kld_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "util/error.h"

namespace proctor {

LlamaPositionScore ScoreLlamaPosition(const float* logits, int64_t n_vocab,
                                      const LlamaKldRecordView& record, int32_t token,
                                      const std::string& where, int64_t position) {
  CHECK_MSG(n_vocab >= 1 && 0 <= token && token < n_vocab, "token {} of vocabulary {}", token,
            n_vocab);
  float max_logit = logits[0];
  int64_t imax = 0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    if (!std::isfinite(logits[i])) {
      Fail("kl", "{} position {}: candidate logit {} is {}; the scorer needs finite logits", where,
           position, i, logits[i]);
    }
    if (logits[i] > max_logit) {
      max_logit = logits[i];
      imax = i;
    }
  }
  double sum_exp = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
  const float log_sum_exp = static_cast<float>(std::log(sum_exp));

  LlamaPositionScore out;
  out.nll = max_logit + log_sum_exp - logits[token];
  out.nll_base = -record.LogProb(token);
  const float log_normalizer = max_logit + log_sum_exp;
  double sum = 0;
  int64_t imax_base = -1;
  float p_log_base_max = 0;
  for (int64_t i = 0; i < n_vocab; ++i) {
    const float p_log_base = record.LogProb(i);
    if (i == 0 || p_log_base > p_log_base_max) {
      p_log_base_max = p_log_base;
      imax_base = i;
    }
    // llama.cpp's cutoff: base probabilities below e^-16 are left out (and not renormalised).
    if (p_log_base > -16.f) {
      const float p_base = std::exp(p_log_base);
      sum += p_base * (p_log_base - logits[i] + log_normalizer);
    }
  }
  out.kld = sum;
  out.same_top = imax == imax_base;
  const float p_base = std::exp(-out.nll_base);
  const float p = std::exp(-out.nll);
  out.p_diff = p - p_base;
  return out;
}

void LlamaKlSums::Add(const LlamaPositionScore& s) {
  sum_nll += s.nll;
  sum_nll2 += s.nll * s.nll;  // float products, as llama.cpp
  sum_nll_base += s.nll_base;
  sum_nll_base2 += s.nll_base * s.nll_base;
  sum_nll_nll_base += s.nll * s.nll_base;
  sum_kld += s.kld;
  sum_kld2 += s.kld * s.kld;
  ++count;
  if (s.same_top) ++n_same_top;
  sum_p_diff += s.p_diff;
  const double p_diff2 = s.p_diff * s.p_diff;
  sum_p_diff2 += p_diff2;
  sum_p_diff4 += p_diff2 * p_diff2;
  max_p_diff = std::max(max_p_diff, std::fabs(s.p_diff));
}

ValueAndUncertainty LlamaMeanAndUncertainty(double sum, double sum2, int64_t count) {
  if (count < 1) return {};
  const double mean = sum / static_cast<double>(count);
  double var = sum2 / static_cast<double>(count) - mean * mean;
  var = var > 0 && count > 10 ? std::sqrt(var / static_cast<double>(count - 1)) : 0.;
  return {mean, var};
}

float LlamaPercentile(const std::vector<float>& sorted, float fraction) {
  CHECK(!sorted.empty());
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  float p = fraction * static_cast<float>(sorted.size() - 1);
  const size_t ip = static_cast<size_t>(p);
  p -= static_cast<float>(ip);
  return (1 - p) * sorted[ip] + p * sorted[std::min(ip + 1, sorted.size() - 1)];
}

namespace {

float Median(const std::vector<float>& v) {
  const size_t n = v.size();
  return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

}  // namespace

LlamaKlStats ComputeLlamaKlStats(const LlamaKlSums& sums, std::vector<float> kld_values,
                                 std::vector<float> p_diff_values) {
  CHECK_MSG(sums.count >= 1 && kld_values.size() == static_cast<size_t>(sums.count) &&
                p_diff_values.size() == kld_values.size(),
            "count {} with {} KLD and {} dp values", sums.count, kld_values.size(),
            p_diff_values.size());
  std::sort(kld_values.begin(), kld_values.end());
  std::sort(p_diff_values.begin(), p_diff_values.end());
  const int64_t count = sums.count;
  const double n = static_cast<double>(count);
  LlamaKlStats s;
  s.count = count;

  const ValueAndUncertainty log_ppl = LlamaMeanAndUncertainty(sums.sum_nll, sums.sum_nll2, count);
  s.ppl.value = std::exp(log_ppl.value);
  s.ppl.uncertainty = s.ppl.value * log_ppl.uncertainty;
  const ValueAndUncertainty log_ppl_base =
      LlamaMeanAndUncertainty(sums.sum_nll_base, sums.sum_nll_base2, count);
  s.ppl_base.value = std::exp(log_ppl_base.value);
  s.ppl_base.uncertainty = s.ppl_base.value * log_ppl_base.uncertainty;
  // llama.cpp's covariance of the two mean log-perplexities (0 below 10 positions).
  double log_ppl_cov = 0;
  if (count >= 10) {
    log_ppl_cov = sums.sum_nll_nll_base / n - (sums.sum_nll / n) * (sums.sum_nll_base / n);
    log_ppl_cov /= n - 1;
  }
  s.ln_ppl_correlation = log_ppl_cov / (log_ppl.uncertainty * log_ppl_base.uncertainty);
  s.ln_ppl_ratio.value = log_ppl.value - log_ppl_base.value;
  s.ln_ppl_ratio.uncertainty =
      std::sqrt(log_ppl.uncertainty * log_ppl.uncertainty +
                log_ppl_base.uncertainty * log_ppl_base.uncertainty - 2.0 * log_ppl_cov);
  s.ppl_ratio.value = std::exp(s.ln_ppl_ratio.value);
  s.ppl_ratio.uncertainty = s.ppl_ratio.value * s.ln_ppl_ratio.uncertainty;
  const double ppl_cov = s.ppl.value * s.ppl_base.value * log_ppl_cov;
  s.ppl_diff.value = s.ppl.value - s.ppl_base.value;
  s.ppl_diff.uncertainty =
      std::sqrt(s.ppl.uncertainty * s.ppl.uncertainty +
                s.ppl_base.uncertainty * s.ppl_base.uncertainty - 2.0 * ppl_cov);

  s.kld = LlamaMeanAndUncertainty(sums.sum_kld, sums.sum_kld2, count);
  const auto& k = kld_values;
  s.kld_max = k.back();
  s.kld_p999 = LlamaPercentile(k, 0.999f);
  s.kld_p99 = LlamaPercentile(k, 0.990f);
  s.kld_p95 = LlamaPercentile(k, 0.950f);
  s.kld_p90 = LlamaPercentile(k, 0.900f);
  s.kld_median = Median(k);
  s.kld_p10 = LlamaPercentile(k, 0.100f);
  s.kld_p5 = LlamaPercentile(k, 0.050f);
  s.kld_p1 = LlamaPercentile(k, 0.010f);
  s.kld_p01 = LlamaPercentile(k, 0.001f);
  s.kld_min = k.front();

  s.p_diff = LlamaMeanAndUncertainty(sums.sum_p_diff, sums.sum_p_diff2, count);
  const auto& d = p_diff_values;
  s.p_diff_max = d.back();
  s.p_diff_p999 = LlamaPercentile(d, 0.999f);
  s.p_diff_p99 = LlamaPercentile(d, 0.990f);
  s.p_diff_p95 = LlamaPercentile(d, 0.950f);
  s.p_diff_p90 = LlamaPercentile(d, 0.900f);
  s.p_diff_p75 = LlamaPercentile(d, 0.750f);
  s.p_diff_median = Median(d);
  s.p_diff_p25 = LlamaPercentile(d, 0.250f);
  s.p_diff_p10 = LlamaPercentile(d, 0.100f);
  s.p_diff_p5 = LlamaPercentile(d, 0.050f);
  s.p_diff_p1 = LlamaPercentile(d, 0.010f);
  s.p_diff_p01 = LlamaPercentile(d, 0.001f);
  s.p_diff_min = d.front();

  const ValueAndUncertainty mse =
      LlamaMeanAndUncertainty(sums.sum_p_diff2, sums.sum_p_diff4, count);
  s.p_diff_rms.value = std::sqrt(mse.value);
  s.p_diff_rms.uncertainty = 0.5 / s.p_diff_rms.value * mse.uncertainty;
  s.same_top.value = static_cast<double>(sums.n_same_top) / n;
  s.same_top.uncertainty = std::sqrt(s.same_top.value * (1.0 - s.same_top.value) / (n - 1));
  return s;
}

std::string FormatLlamaKlStats(const LlamaKlStats& s,
                               std::optional<ValueAndUncertainty> exact_base_ppl) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "====== Perplexity statistics ======\n");
  fmt::format_to(out, "Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", s.ppl.value,
                 s.ppl.uncertainty);
  fmt::format_to(out, "Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", s.ppl_base.value,
                 s.ppl_base.uncertainty);
  if (exact_base_ppl) {
    fmt::format_to(out, "Mean PPL(base), exact logits  : {:10.6f} ± {:10.6f}\n",
                   exact_base_ppl->value, exact_base_ppl->uncertainty);
  }
  fmt::format_to(out, "Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100.0 * s.ln_ppl_correlation);
  fmt::format_to(out, "Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", s.ln_ppl_ratio.value,
                 s.ln_ppl_ratio.uncertainty);
  fmt::format_to(out, "Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", s.ppl_ratio.value,
                 s.ppl_ratio.uncertainty);
  fmt::format_to(out, "Mean PPL(Q)-PPL(base)         : {:10.6f} ± {:10.6f}\n", s.ppl_diff.value,
                 s.ppl_diff.uncertainty);
  fmt::format_to(out, "\n====== KL divergence statistics ======\n");
  fmt::format_to(out, "Mean    KLD: {:10.6f} ± {:10.6f}\n", s.kld.value, s.kld.uncertainty);
  fmt::format_to(out, "Maximum KLD: {:10.6f}\n", s.kld_max);
  fmt::format_to(out, "99.9%   KLD: {:10.6f}\n", s.kld_p999);
  fmt::format_to(out, "99.0%   KLD: {:10.6f}\n", s.kld_p99);
  fmt::format_to(out, "95.0%   KLD: {:10.6f}\n", s.kld_p95);
  fmt::format_to(out, "90.0%   KLD: {:10.6f}\n", s.kld_p90);
  fmt::format_to(out, "Median  KLD: {:10.6f}\n", s.kld_median);
  fmt::format_to(out, "10.0%   KLD: {:10.6f}\n", s.kld_p10);
  fmt::format_to(out, " 5.0%   KLD: {:10.6f}\n", s.kld_p5);
  fmt::format_to(out, " 1.0%   KLD: {:10.6f}\n", s.kld_p1);
  fmt::format_to(out, " 0.1%   KLD: {:10.6f}\n", s.kld_p01);
  fmt::format_to(out, "Minimum KLD: {:10.6f}\n", s.kld_min);
  fmt::format_to(out, "\n====== Token probability statistics ======\n");
  fmt::format_to(out, "Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100.0 * s.p_diff.value,
                 100.0 * s.p_diff.uncertainty);
  fmt::format_to(out, "Maximum Δp: {:6.3f}%\n", 100.0 * s.p_diff_max);
  fmt::format_to(out, "99.9%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p999);
  fmt::format_to(out, "99.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p99);
  fmt::format_to(out, "95.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p95);
  fmt::format_to(out, "90.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p90);
  fmt::format_to(out, "75.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p75);
  fmt::format_to(out, "Median  Δp: {:6.3f}%\n", 100.0 * s.p_diff_median);
  fmt::format_to(out, "25.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p25);
  fmt::format_to(out, "10.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p10);
  fmt::format_to(out, " 5.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p5);
  fmt::format_to(out, " 1.0%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p1);
  fmt::format_to(out, " 0.1%   Δp: {:6.3f}%\n", 100.0 * s.p_diff_p01);
  fmt::format_to(out, "Minimum Δp: {:6.3f}%\n", 100.0 * s.p_diff_min);
  fmt::format_to(out, "RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100.0 * s.p_diff_rms.value,
                 100.0 * s.p_diff_rms.uncertainty);
  fmt::format_to(out, "Same top p: {:6.3f} ± {:5.3f} %\n", 100.0 * s.same_top.value,
                 100.0 * s.same_top.uncertainty);
  return o;
}

}  // namespace proctor
