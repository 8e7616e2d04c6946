#include "eval/runners/kl_diff.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Json ReadKlResult(const fs::path& path) {
  Json j;
  try {
    j = Json::parse(ReadFileToString(path));
  } catch (const Json::exception& e) {
    Fail("kl-diff", "'{}' is not JSON: {}", path.string(), e.what());
  }
  if (!j.is_object() || j.value("schema", "") != "proctor-results" ||
      j.value("command", "") != "kl" || !j.contains("results") ||
      !j["results"].contains("sequence_mean_kl")) {
    Fail("kl-diff",
         "'{}' is not a `proctor kl --json` result with per-sequence values (schema "
         "proctor-results, command kl; it has command '{}')",
         path.string(), j.is_object() ? j.value("command", "?") : "?");
  }
  return j;
}

// The manifest sha256 of the dump an envelope's inputs list, or "" when not recorded.
std::string DumpSha(const Json& envelope) {
  for (const Json& input : envelope.value("inputs", Json::array())) {
    if (input.value("role", "") == "reference_logits") return input.value("manifest_sha256", "");
  }
  return "";
}

std::vector<double> Values(const Json& results, const char* key, const std::string& name) {
  std::vector<double> out;
  if (!results.contains(key) || !results[key].is_array()) {
    Fail("kl-diff", "'{}' has no {} (written by an older proctor? score it again)", name, key);
  }
  for (const Json& v : results[key]) {
    out.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

// The per-sequence lists of a kl result that pair, and the metric each is.
constexpr const char* kSequenceLists[] = {"sequence_mean_kl", "sequence_top1", "sequence_mean_nll"};
constexpr const char* kMetricNames[] = {"kl", "top1", "nll"};

}  // namespace

KlDiffResult CompareKlResults(const fs::path& a, const fs::path& b, int bootstrap_draws,
                              uint32_t seed) {
  const Json ja = ReadKlResult(a), jb = ReadKlResult(b);
  const Json& ra = ja["results"];
  const Json& rb = jb["results"];
  const auto same = [&](const std::string& what, const Json& x, const Json& y) {
    if (x != y) {
      Fail("kl-diff",
           "'{}' and '{}' were not scored on the same {}: {} vs {}. Only results of one dump "
           "and the same positions pair up.",
           a.string(), b.string(), what, x.dump(), y.dump());
    }
  };
  same("mode", ra.value("mode", Json()), rb.value("mode", Json()));
  for (const char* key :
       {"path", "corpus_sha256", "n_seqs", "positions_per_seq", "top_k", "model"}) {
    same(fmt::format("reference {}", key), ra["reference"].value(key, Json()),
         rb["reference"].value(key, Json()));
  }
  same("positions", ra.value("positions", Json()), rb.value("positions", Json()));
  same("sequences", ra.value("sequences", Json()), rb.value("sequences", Json()));
  const std::string sha_a = DumpSha(ja), sha_b = DumpSha(jb);
  if (!sha_a.empty() && !sha_b.empty()) same("dump (manifest sha256)", Json(sha_a), Json(sha_b));
  KlDiffResult result;
  result.candidate_a = ra.value("candidate", a.string());
  result.candidate_b = rb.value("candidate", b.string());
  result.reference = ra["reference"].value("path", "");
  for (const char* key : kSequenceLists) {
    const Json na = ra.contains(key) && ra[key].is_array() ? Json(ra[key].size()) : Json();
    const Json nb = rb.contains(key) && rb[key].is_array() ? Json(rb[key].size()) : Json();
    if (!na.is_null() && !nb.is_null()) same(fmt::format("number of {}", key), na, nb);
  }
  result.metrics = PairKlMetrics(ra, rb, a.string(), b.string(), bootstrap_draws, seed);
  return result;
}

std::vector<KlDiffMetric> PairKlMetrics(const Json& a, const Json& b, const std::string& a_name,
                                        const std::string& b_name, int bootstrap_draws,
                                        uint32_t seed) {
  std::vector<KlDiffMetric> metrics;
  for (size_t m = 0; m < std::size(kSequenceLists); ++m) {
    const char* key = kSequenceLists[m];
    const std::vector<double> va = Values(a, key, a_name), vb = Values(b, key, b_name);
    CHECK_MSG(va.size() == vb.size(), "{}: {} vs {} sequences", key, va.size(), vb.size());
    metrics.push_back({kMetricNames[m], ComparePairedSequences(va, vb, bootstrap_draws, seed)});
  }
  return metrics;
}

std::string FormatKlDiff(const KlDiffResult& r) {
  std::string out =
      fmt::format("A: {}\nB: {}\n(paired over {} sequences of {})\n", r.candidate_a, r.candidate_b,
                  r.metrics.empty() ? 0 : r.metrics[0].paired.sequences, r.reference);
  out += fmt::format("{:<8} {:>12} {:>12} {:>12} {:>10} {:>27} {:>27}  {}\n", "metric", "A", "B",
                     "B - A", "± SE", "95% interval", "bootstrap 95%", "verdict");
  for (const KlDiffMetric& m : r.metrics) {
    const PairedDifference& p = m.paired;
    const std::string boot =
        p.bootstrap_draws > 0 ? fmt::format("[{:+.4e}, {:+.4e}]", p.bootstrap_low, p.bootstrap_high)
                              : std::string("-");
    out += fmt::format("{:<8} {:>12.5e} {:>12.5e} {:>+12.4e} {:>10.2e} {:>27} {:>27}  {}\n", m.name,
                       p.mean_a, p.mean_b, p.difference, p.standard_error,
                       fmt::format("[{:+.4e}, {:+.4e}]", p.low, p.high), boot,
                       p.distinguishable ? "distinguishable" : "not distinguishable");
  }
  out +=
      "B - A: the mean of per-sequence differences; ± SE: their sample standard deviation / "
      "sqrt(sequences); 95% interval: ± 1.96 SE; bootstrap: sequences resampled with "
      "replacement; distinguishable: every interval excludes 0.\n";
  return out;
}

nlohmann::ordered_json KlDiffToJson(const KlDiffResult& r) {
  return {{"a", r.candidate_a},
          {"b", r.candidate_b},
          {"reference", r.reference},
          {"metrics", KlDiffMetricsToJson(r.metrics)}};
}

nlohmann::ordered_json KlDiffMetricsToJson(const std::vector<KlDiffMetric>& all) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  for (const KlDiffMetric& m : all) {
    const PairedDifference& p = m.paired;
    metrics[m.name] = {{"sequences", p.sequences},
                       {"mean_a", p.mean_a},
                       {"mean_b", p.mean_b},
                       {"difference", p.difference},
                       {"standard_error", p.standard_error},
                       {"interval_95", {p.low, p.high}},
                       {"bootstrap_draws", p.bootstrap_draws},
                       {"bootstrap_interval_95", {p.bootstrap_low, p.bootstrap_high}},
                       {"distinguishable", p.distinguishable}};
  }
  return metrics;
}

}  // namespace proctor
