#include "eval/tasks/task_data.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/tasks/answer_extraction.h"
#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace fs = std::filesystem;

std::vector<CsvRecord> ParseCsv(std::string_view text, const std::string& source) {
  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  bool in_quotes = false;
  bool field_was_quoted = false;
  int64_t line = 1;
  int64_t quote_line = 0;
  record.line = 1;
  auto end_field = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    field_was_quoted = false;
  };
  auto end_record = [&] {
    end_field();
    records.push_back(std::move(record));
    record = CsvRecord{};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || field_was_quoted) {
        Fail("tasks", "{}:{}: a quote inside an unquoted field (RFC 4180 CSV expected)", source,
             line);
      }
      in_quotes = true;
      field_was_quoted = true;
      quote_line = line;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      ++line;
      record.line = line;
    } else {
      if (field_was_quoted) {
        Fail("tasks", "{}:{}: text after a closing quote (RFC 4180 CSV expected)", source, line);
      }
      field += c;
    }
  }
  if (in_quotes) {
    Fail("tasks", "{}:{}: a quoted field is never closed (the file is truncated?)", source,
         quote_line);
  }
  if (!field.empty() || field_was_quoted || !record.fields.empty()) end_record();
  return records;
}

namespace {

std::vector<MmluItem> ReadMmluFile(const fs::path& file) {
  const std::string text = ReadFileToString(file);
  std::vector<MmluItem> items;
  for (const CsvRecord& record : ParseCsv(text, file.string())) {
    if (record.fields.size() == 1 && record.fields[0].empty()) continue;  // a blank line
    if (record.fields.size() != 6) {
      Fail("tasks", "{}:{}: expected 6 fields (question, A, B, C, D, answer), got {}",
           file.string(), record.line, record.fields.size());
    }
    MmluItem item;
    item.question = record.fields[0];
    for (int c = 0; c < 4; ++c) item.choices[c] = record.fields[static_cast<size_t>(c) + 1];
    const std::string& letter = record.fields[5];
    if (letter.size() != 1 || letter[0] < 'A' || letter[0] > 'D') {
      Fail("tasks", "{}:{}: the answer must be one of A, B, C, D, got '{}'", file.string(),
           record.line, letter);
    }
    item.answer = letter[0] - 'A';
    items.push_back(std::move(item));
  }
  return items;
}

// The subject names of DIR/SPLIT/*_SPLIT.csv, sorted.
std::vector<std::string> SubjectsOf(const fs::path& dir, const std::string& split) {
  const fs::path folder = dir / split;
  if (!fs::is_directory(folder)) {
    Fail("tasks",
         "MMLU: no folder '{}' (expected Hendrycks' layout: dev/, test/ with "
         "SUBJECT_dev.csv, SUBJECT_test.csv)",
         folder.string());
  }
  const std::string suffix = "_" + split + ".csv";
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > suffix.size() && file.ends_with(suffix)) {
      names.push_back(file.substr(0, file.size() - suffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<MmluSubject> ReadMmlu(const fs::path& dir) {
  const std::vector<std::string> names = SubjectsOf(dir, "test");
  if (names.empty()) Fail("tasks", "MMLU: no *_test.csv files in '{}'", (dir / "test").string());
  std::vector<MmluSubject> subjects;
  for (const std::string& name : names) {
    MmluSubject subject;
    subject.name = name;
    const fs::path dev = dir / "dev" / (name + "_dev.csv");
    if (!fs::exists(dev)) {
      Fail("tasks", "MMLU: subject '{}' has a test file but no few-shot file '{}'", name,
           dev.string());
    }
    subject.dev = ReadMmluFile(dev);
    if (subject.dev.size() < 5) {
      Fail("tasks", "MMLU: '{}' has {} rows; the 5-shot prompt needs 5", dev.string(),
           subject.dev.size());
    }
    subject.test = ReadMmluFile(dir / "test" / (name + "_test.csv"));
    subjects.push_back(std::move(subject));
  }
  return subjects;
}

std::vector<JsonLine> ReadJsonLines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) Fail("tasks", "cannot open '{}'", file.string());
  std::vector<JsonLine> rows;
  int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty() || line == "\r") continue;
    JsonLine row{.value = {}, .line = line_number};
    try {
      row.value = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::ordered_json::exception& e) {
      Fail("tasks", "{}:{}: not a JSON object: {}", file.string(), line_number, e.what());
    }
    if (!row.value.is_object()) {
      Fail("tasks", "{}:{}: not a JSON object", file.string(), line_number);
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) Fail("tasks", "'{}' has no items", file.string());
  return rows;
}

std::string StripWhitespace(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t begin = text.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return std::string(text.substr(begin, text.find_last_not_of(kSpace) - begin + 1));
}

std::vector<Gsm8kItem> ReadGsm8k(const fs::path& file) {
  std::vector<Gsm8kItem> items;
  for (const JsonLine& line : ReadJsonLines(file)) {
    const nlohmann::ordered_json& row = line.value;
    const int64_t line_number = line.line;
    if (!row.contains("question") || !row["question"].is_string() || !row.contains("answer") ||
        !row["answer"].is_string()) {
      Fail("tasks", "{}:{}: expected {{\"question\": str, \"answer\": str}}", file.string(),
           line_number);
    }
    Gsm8kItem item;
    item.question = row["question"].get<std::string>();
    item.answer_text = row["answer"].get<std::string>();
    const size_t mark = item.answer_text.rfind("####");
    const std::optional<double> value = mark == std::string::npos
                                            ? std::nullopt
                                            : ParseAnswerNumber(item.answer_text.substr(mark + 4));
    if (!value) {
      Fail("tasks", "{}:{}: the answer does not end in '#### NUMBER'", file.string(), line_number);
    }
    item.answer = *value;
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace proctor
