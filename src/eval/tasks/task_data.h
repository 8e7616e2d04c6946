// The task sets of the task evals, read from their original files (../shared/fixtures or
// --data-dir): MMLU in Hendrycks' CSV layout, GSM8K as OpenAI's JSONL. Every malformed row is an
// Error naming the file and the line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace proctor {

struct MmluItem {
  std::string question;
  std::string choices[4];  // A, B, C, D
  int answer = 0;          // 0..3
};

struct MmluSubject {
  std::string name;            // the file stem without its split suffix: "abstract_algebra"
  std::vector<MmluItem> dev;   // the few-shot examples (dev/NAME_dev.csv)
  std::vector<MmluItem> test;  // the scored items (test/NAME_test.csv)
};

// DIR/dev/*_dev.csv and DIR/test/*_test.csv (no header; question, A, B, C, D, answer letter),
// subjects sorted by name. Every test subject needs its dev file with at least 5 rows.
std::vector<MmluSubject> ReadMmlu(const std::filesystem::path& dir);

// One CSV file as RFC 4180 defines it (quoted fields, "" inside quotes, line breaks inside
// quotes); each record with the line it starts on. `source` names the file in errors.
struct CsvRecord {
  std::vector<std::string> fields;
  int64_t line = 0;
};
std::vector<CsvRecord> ParseCsv(std::string_view text, const std::string& source);

// One JSON object per non-blank line of a JSONL file, with the line it came from. Error naming the
// file (and the line) when it cannot be read, a line is not a JSON object, or it has none.
struct JsonLine {
  nlohmann::ordered_json value;
  int64_t line = 0;
};
std::vector<JsonLine> ReadJsonLines(const std::filesystem::path& file);

// `text` without leading and trailing whitespace (" \t\n\r\f\v"), as Python's str.strip().
std::string StripWhitespace(std::string_view text);

struct Gsm8kItem {
  std::string question;
  std::string answer_text;  // the worked solution, ending in "#### N"
  double answer = 0;        // N (commas stripped)
};

// FILE: one JSON object per line with "question" and "answer" (the solution ending "#### N").
std::vector<Gsm8kItem> ReadGsm8k(const std::filesystem::path& file);

}  // namespace proctor
