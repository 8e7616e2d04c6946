#include "eval/compare/compare_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "eval/scoring/paired_difference.h"
#include "util/html_escape.h"

namespace proctor {
namespace {

// The numbers of one row, read once for every form.
struct RowNumbers {
  double kl_mean, kl_se, kl_median, kl_p95, top1, mass;
  double ppl, ppl_se, delta_ppl;
};

RowNumbers NumbersOf(const CompareRow& r, double teacher_ppl) {
  const auto& kl = r.kl.at("kl");
  return {.kl_mean = kl.at("mean").get<double>(),
          .kl_se = kl.at("standard_error").get<double>(),
          .kl_median = kl.at("median").get<double>(),
          .kl_p95 = kl.at("p95").get<double>(),
          .top1 = r.kl.at("top1_agreement").get<double>(),
          .mass = r.kl.at("mean_captured_mass").get<double>(),
          .ppl = r.perplexity.ppl,
          .ppl_se = r.perplexity.standard_error,
          .delta_ppl = r.perplexity.ppl - teacher_ppl};
}

// A row's per-sequence mean KL (NaN where a sequence had no position).
std::vector<double> SequenceKl(const CompareRow& r) {
  std::vector<double> out;
  for (const auto& v : r.kl.value("sequence_mean_kl", nlohmann::ordered_json::array())) {
    out.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

// Row i against the row above and the teacher's own row (docs/statistics.md); the teacher's
// row is the floor.
RowAgainstAbove VsAboveOf(const CompareResult& result, size_t i) {
  if (i == 0) return {.verdict = "floor"};
  return CompareRowWithAbove(SequenceKl(result.rows.front()), SequenceKl(result.rows[i - 1]),
                             SequenceKl(result.rows[i]));
}

double TeacherPpl(const CompareResult& result) {
  return result.rows.empty() ? 0.0 : result.rows.front().perplexity.ppl;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool HasSequenceLists(const nlohmann::ordered_json& kl) {
  for (const char* key : {"sequence_mean_kl", "sequence_top1", "sequence_mean_nll"}) {
    if (!kl.contains(key) || !kl.at(key).is_array()) return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<KlDiffMetric>> PairedWithAbove(const CompareResult& result, size_t i) {
  if (i == 0 || i >= result.rows.size()) return std::nullopt;
  const CompareRow& above = result.rows[i - 1];
  const CompareRow& row = result.rows[i];
  if (!HasSequenceLists(above.kl) || !HasSequenceLists(row.kl) ||
      above.kl.at("sequence_mean_kl").size() != row.kl.at("sequence_mean_kl").size()) {
    return std::nullopt;
  }
  return PairKlMetrics(nlohmann::json(above.kl), nlohmann::json(row.kl), above.candidate,
                       row.candidate, kDefaultBootstrapDraws, kDefaultBootstrapSeed);
}

std::string FormatCompareTable(const CompareResult& result) {
  size_t width = 9;
  for (const auto& r : result.rows) width = std::max(width, r.candidate.size());
  std::string out = fmt::format(
      "{:<{}}  {:>6}  {:>21}  {:>20}  {:>8}  {:>9}  {:>9}  {:>7}  {:>6}  {:>17}  "
      "{:>9}  {:>8}\n",
      "candidate", width, "bits/w", "KL mean +- SE", "dKL vs above +- SE", "verdict", "median",
      "p95", "top-1", "mass", "perplexity +- SE", "delta-ppl", "seconds");
  const double teacher_ppl = TeacherPpl(result);
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    const RowNumbers n = NumbersOf(r, teacher_ppl);
    const RowAgainstAbove v = VsAboveOf(result, i);
    out += fmt::format(
        "{:<{}}  {:>6.2f}  {:>21}  {:>20}  {:>8}  {:>9.3e}  {:>9.3e}  {:>7.4f}  {:>6.4f}  {:>17}  "
        "{:>+9.3f}  {:>8}\n",
        r.candidate, width, r.bits_per_weight, fmt::format("{:.3e} +- {:.1e}", n.kl_mean, n.kl_se),
        RowAgainstAboveText(v, "+-"), v.verdict, n.kl_median, n.kl_p95, n.top1, n.mass,
        fmt::format("{:.3f} +- {:.3f}", n.ppl, n.ppl_se), n.delta_ppl,
        fmt::format("{:.2f}{}", r.seconds, r.reused ? "*" : ""));
  }
  return out;
}

std::string CompareLegend(const CompareResult& result) {
  const bool any_reused =
      std::any_of(result.rows.begin(), result.rows.end(), [](const auto& r) { return r.reused; });
  return fmt::format(
      "How to read it:\n"
      "  KL          KL(teacher || candidate) over the teacher's top-{} logits, nats per\n"
      "              position: mean of per-sequence means +- its standard error; median and\n"
      "              p95 over all positions\n"
      "  dKL vs above the row's mean KL minus the row above's, paired over the same\n"
      "              sequences, +- the paired standard error (kl-diff's numbers)\n"
      "  verdict     at floor: the paired 95% interval against the teacher's own row\n"
      "              includes 0; else worse / better when the interval against the row\n"
      "              above excludes 0, same when it does not\n"
      "  top-1       how often the candidate's argmax is the teacher's\n"
      "  mass        teacher probability inside its top-{} (what the KL sees)\n"
      "  perplexity  exp(mean next-token NLL) over the corpus, +- its standard error\n"
      "  delta-ppl   the candidate's perplexity minus the teacher's\n"
      "  bits/w      stored bits (codes, scales, biases, unquantized tensors) per teacher "
      "parameter\n"
      "  seconds     the model's scoring pass (forward + KL + NLL); the teacher's is its dump,\n"
      "              which scores the floor as it writes{}\n"
      "The teacher scored against its own dump is the floor set by storing logits as fp16: "
      "differences below\nit mean nothing.\n",
      result.top_k, result.top_k,
      any_reused ? "; * = taken from an earlier run of the same command" : "");
}

std::string FormatCompareMarkdown(const CompareResult& result) {
  std::string out =
      "| candidate | bits/w | KL mean ± SE | ΔKL vs above ± SE | verdict | median | p95 | top-1 | "
      "mass | perplexity ± SE | Δppl | seconds |\n"
      "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  const double teacher_ppl = TeacherPpl(result);
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    const RowNumbers n = NumbersOf(r, teacher_ppl);
    const RowAgainstAbove v = VsAboveOf(result, i);
    out += fmt::format(
        "| {} | {:.2f} | {:.3e} ± {:.1e} | {} | {} | {:.3e} | {:.3e} | {:.4f} | {:.4f} | "
        "{:.3f} ± {:.3f} | {:+.3f} | {:.2f}{} |\n",
        r.candidate, r.bits_per_weight, n.kl_mean, n.kl_se, RowAgainstAboveText(v, "±"), v.verdict,
        n.kl_median, n.kl_p95, n.top1, n.mass, n.ppl, n.ppl_se, n.delta_ppl, r.seconds,
        r.reused ? "*" : "");
  }
  return out + "\n```\n" + CompareLegend(result) + "```\n";
}

std::string FormatCompareCsv(const CompareResult& result) {
  std::string out =
      "candidate,kind,model,bits_per_weight,kl_mean,kl_standard_error,"
      "kl_difference_vs_above,kl_difference_standard_error,verdict,kl_median,kl_p95,"
      "top1_agreement,mean_captured_mass,perplexity,perplexity_standard_error,delta_perplexity,"
      "prepare_seconds,seconds,reused,kl_difference_interval_low,kl_difference_interval_high,"
      "kl_difference_bootstrap_low,kl_difference_bootstrap_high,kl_difference_distinguishable,"
      "top1_difference_vs_above,top1_difference_standard_error,nll_difference_vs_above,"
      "nll_difference_standard_error\n";
  const double teacher_ppl = TeacherPpl(result);
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    const RowNumbers n = NumbersOf(r, teacher_ppl);
    const RowAgainstAbove v = VsAboveOf(result, i);
    const std::string difference = v.known ? fmt::format("{}", v.difference) : "";
    const std::string difference_se = v.known ? fmt::format("{}", v.standard_error) : "";
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                       CsvField(r.candidate), r.kind, CsvField(r.model), r.bits_per_weight,
                       n.kl_mean, n.kl_se, difference, difference_se, v.verdict, n.kl_median,
                       n.kl_p95, n.top1, n.mass, n.ppl, n.ppl_se, n.delta_ppl, r.prepare_seconds,
                       r.seconds, r.reused ? "true" : "false");
    const auto paired = PairedWithAbove(result, i);
    if (!paired) {
      out += ",,,,,,,,,\n";
      continue;
    }
    const PairedDifference& kl = (*paired)[0].paired;
    const PairedDifference& top1 = (*paired)[1].paired;
    const PairedDifference& nll = (*paired)[2].paired;
    out += fmt::format(",{},{},{},{},{},{},{},{},{}\n", kl.low, kl.high, kl.bootstrap_low,
                       kl.bootstrap_high, kl.distinguishable ? "true" : "false", top1.difference,
                       top1.standard_error, nll.difference, nll.standard_error);
  }
  return out;
}

std::string FormatCompareHtml(const CompareResult& result) {
  std::string out =
      "<table>\n<thead><tr><th>candidate</th><th>bits/w</th><th>KL mean ± SE</th>"
      "<th>ΔKL vs above ± SE</th><th>verdict</th><th>median</th><th>p95</th><th>top-1</th>"
      "<th>mass</th><th>perplexity ± SE</th><th>Δppl</th><th>seconds</th></tr></thead>\n"
      "<tbody>\n";
  const double teacher_ppl = TeacherPpl(result);
  for (size_t i = 0; i < result.rows.size(); ++i) {
    const CompareRow& r = result.rows[i];
    const RowNumbers n = NumbersOf(r, teacher_ppl);
    const RowAgainstAbove v = VsAboveOf(result, i);
    out += fmt::format(
        "<tr class=\"{}\"><td>{}</td><td>{:.2f}</td><td>{:.3e} ± {:.1e}</td><td>{}</td>"
        "<td>{}</td><td>{:.3e}</td><td>{:.3e}</td><td>{:.4f}</td><td>{:.4f}</td>"
        "<td>{:.3f} ± {:.3f}</td><td>{:+.3f}</td><td>{:.2f}{}</td></tr>\n",
        HtmlEscape(r.kind), HtmlEscape(r.candidate), r.bits_per_weight, n.kl_mean, n.kl_se,
        RowAgainstAboveText(v, "±"), v.verdict, n.kl_median, n.kl_p95, n.top1, n.mass, n.ppl,
        n.ppl_se, n.delta_ppl, r.seconds, r.reused ? "*" : "");
  }
  return out + "</tbody>\n</table>\n";
}

}  // namespace proctor
