// The comparison of a `proctor compare` (or `demo`) run for people and for spreadsheets: one row
// per model (the teacher first, then by bits per weight), the same columns in every form.
//
//   candidate, bits/w, KL mean +- SE, dKL vs above +- SE, verdict, median, p95, top-1, mass,
//   perplexity +- SE, delta-ppl, seconds
//
// dKL vs above: the row's mean KL minus the row above's, paired over the same sequences (the
// numbers `proctor kl-diff` gives for the two rows); verdict: "at floor" when the paired 95%
// interval against the teacher's own row includes 0, else "worse" / "better" when the interval
// against the row above excludes 0, "same" when it does not ("floor" for the teacher, "-" with
// fewer than 2 sequences).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/compare/compare_pipeline.h"
#include "eval/runners/kl_diff.h"

namespace proctor {

// Row i (i > 0) against the row above, as `proctor kl-diff` pairs them with its default
// bootstrap: KL, top-1 and NLL differences. nullopt for the first row and for rows recorded
// without per-sequence lists (by an older proctor).
std::optional<std::vector<KlDiffMetric>> PairedWithAbove(const CompareResult& result, size_t i);

// Aligned columns for the terminal; a reused row's seconds carry a '*'.
std::string FormatCompareTable(const CompareResult& result);
// What each column means (the terminal and the Markdown file end with it).
std::string CompareLegend(const CompareResult& result);
// A GitHub-flavoured Markdown table followed by the legend.
std::string FormatCompareMarkdown(const CompareResult& result);
// RFC 4180 CSV with a header row; numbers at full precision, one column per number. Besides the
// table's columns, PairedWithAbove's: the KL difference's 95% and bootstrap intervals and the
// top-1 and NLL differences with their standard errors.
std::string FormatCompareCsv(const CompareResult& result);
// An HTML <table> (text escaped; the report page's), the same columns as the terminal's.
std::string FormatCompareHtml(const CompareResult& result);

}  // namespace proctor
