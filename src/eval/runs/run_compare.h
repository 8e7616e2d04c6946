// Two recorded runs of one task paired on the items both scored (`proctor runs compare`): the
// accuracy difference B - A with its paired standard error and McNemar's exact p-value.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/runs/run_database.h"
#include "eval/scoring/paired_outcomes.h"

namespace proctor {

struct RunComparison {
  RunRecord a;  // without items
  RunRecord b;
  PairedOutcomes paired;
  int64_t only_in_a = 0;  // items run A scored and B did not (left out of the pairing)
  int64_t only_in_b = 0;
};

// Error("[runs] ...") when the runs are of different tasks or share no item.
RunComparison CompareRuns(const RunRecord& a, const RunRecord& b);

std::string FormatRunComparison(const RunComparison& comparison);
nlohmann::ordered_json RunComparisonToJson(const RunComparison& comparison);

// The `proctor runs list` table (id, created, task, model, n, accuracy ± SE, settings summary).
std::string FormatRunList(const std::vector<RunRecord>& runs);
nlohmann::ordered_json RunRecordToJson(const RunRecord& run, bool with_items);

}  // namespace proctor
