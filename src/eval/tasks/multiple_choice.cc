#include "eval/tasks/multiple_choice.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/tasks/task_data.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor {
namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;

namespace {

// row[key] as a string; Error naming the file and the item otherwise.
std::string Field(const OJson& row, const char* key, const fs::path& file, size_t index) {
  if (!row.contains(key) || !row[key].is_string()) {
    Fail("tasks", "{}: item {} has no string \"{}\"", file.string(), index + 1, key);
  }
  return row[key].get<std::string>();
}

void ReplaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// lm-eval's hellaswag preprocess.
std::string HellaswagPreprocess(const std::string& raw) {
  std::string text = StripWhitespace(raw);
  ReplaceAll(text, " [title]", ". ");
  std::string out;  // re.sub("\\[.*?\\]", "", text): each '[' to the next ']'
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      const size_t close = text.find(']', i + 1);
      if (close != std::string::npos) {
        i = close;
        continue;
      }
    }
    out += text[i];
  }
  ReplaceAll(out, "  ", " ");  // one pass, as str.replace
  return out;
}

McItem SharedContextItem(std::string id, const std::string& context,
                         std::vector<std::string> choices, int gold) {
  McItem item;
  item.id = std::move(id);
  for (const std::string& choice : choices) {
    item.requests.push_back({context, fmt::format(" {}", choice)});
  }
  item.choices = std::move(choices);
  item.gold = gold;
  return item;
}

int64_t CodePoints(const std::string& text) {
  int64_t count = 0;
  for (size_t pos = 0; pos < text.size(); ++count) DecodeUtf8(text, &pos, InvalidByte::kAsLatin1);
  return count;
}

// The index of the largest score; the lowest index wins ties.
int BestOf(const std::vector<double>& scores) {
  int best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    if (scores[i] > scores[static_cast<size_t>(best)]) best = static_cast<int>(i);
  }
  return best;
}

class MultipleChoiceTask : public Task {
 public:
  MultipleChoiceTask(std::string name, std::vector<McItem> items, int64_t n, uint32_t seed,
                     bool normalized)
      : name_(std::move(name)),
        items_(std::move(items)),
        picks_(SampleTaskItems(static_cast<int64_t>(items_.size()), n, seed)),
        n_(n),
        seed_(seed),
        normalized_(normalized) {}

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override { return Item(i).id; }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const McItem& item = Item(i);
    ItemRecord record;
    record.id = item.id;
    record.prompt = item.requests.front().context;
    record.expected = std::to_string(item.gold);
    const LoglikelihoodResult result = client.Loglikelihoods(item.requests);
    if (MarkRequestError(result.status, result.error, &record)) return record;
    const int best = BestOf(result.logprobs);
    record.completion = item.choices[static_cast<size_t>(best)];
    record.extracted = std::to_string(best);
    record.outcome = best == item.gold ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    if (normalized_) {
      std::vector<double> per_char;
      per_char.reserve(item.choices.size());
      for (size_t c = 0; c < item.choices.size(); ++c) {
        per_char.push_back(result.logprobs[c] /
                           static_cast<double>(std::max<int64_t>(1, CodePoints(item.choices[c]))));
      }
      record.correct_norm = BestOf(per_char) == item.gold;
    }
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"shots", 0},
            {"scoring", normalized_ ? "log-likelihood: acc and acc_norm (per character)"
                                    : "log-likelihood of the shared rest (partial scoring): acc"},
            {"n", n_},
            {"seed", seed_},
            {"items", items_.size()}};
  }

 private:
  const McItem& Item(int64_t i) const {
    return items_[static_cast<size_t>(picks_[static_cast<size_t>(i)])];
  }

  std::string name_;
  std::vector<McItem> items_;
  std::vector<int64_t> picks_;
  int64_t n_;
  uint32_t seed_;
  bool normalized_;
};

}  // namespace

std::string PythonCapitalize(const std::string& text) {
  std::string out;
  size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    const char32_t cp = DecodeUtf8(text, &pos, InvalidByte::kAsLatin1);
    const auto mapped = first ? utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))
                              : utf8proc_tolower(static_cast<utf8proc_int32_t>(cp));
    AppendUtf8(static_cast<char32_t>(mapped), &out);
    first = false;
  }
  return out;
}

std::vector<McItem> ReadHellaswag(const fs::path& file) {
  const std::vector<JsonLine> rows = ReadJsonLines(file);
  std::vector<McItem> items;
  items.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const OJson& row = rows[i].value;
    if (!row.contains("endings") || !row["endings"].is_array() || row["endings"].empty() ||
        !row.contains("label") || !(row["label"].is_number_integer() || row["label"].is_string())) {
      Fail("tasks", "{}: item {} needs \"endings\" (a list) and \"label\"", file.string(), i + 1);
    }
    const std::string context = HellaswagPreprocess(Field(row, "activity_label", file, i) + ": " +
                                                    Field(row, "ctx_a", file, i) + " " +
                                                    PythonCapitalize(Field(row, "ctx_b", file, i)));
    std::vector<std::string> choices;
    for (const OJson& ending : row["endings"]) {
      if (!ending.is_string())
        Fail("tasks", "{}: item {}: an ending is not a string", file.string(), i + 1);
      choices.push_back(HellaswagPreprocess(ending.get<std::string>()));
    }
    const int gold = row["label"].is_string() ? std::stoi(row["label"].get<std::string>())
                                              : row["label"].get<int>();
    if (gold < 0 || gold >= static_cast<int>(choices.size())) {
      Fail("tasks", "{}: item {}: label {} is not an ending's index", file.string(), i + 1, gold);
    }
    const std::string id = row.contains("ind") ? row["ind"].dump() : std::to_string(i);
    items.push_back(SharedContextItem(id, context, std::move(choices), gold));
  }
  return items;
}

std::vector<McItem> ReadArc(const fs::path& file) {
  const std::vector<JsonLine> rows = ReadJsonLines(file);
  std::vector<McItem> items;
  items.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const OJson& row = rows[i].value;
    if (!row.contains("question") || !row["question"].is_object() ||
        !row["question"].contains("choices") || !row["question"]["choices"].is_array()) {
      Fail("tasks", "{}: item {} needs question.stem and question.choices", file.string(), i + 1);
    }
    const OJson& question = row["question"];
    std::vector<std::string> choices;
    const std::string answer = Field(row, "answerKey", file, i);
    int gold = -1;
    for (const OJson& choice : question["choices"]) {
      if (Field(choice, "label", file, i) == answer) gold = static_cast<int>(choices.size());
      choices.push_back(Field(choice, "text", file, i));
    }
    if (gold < 0)
      Fail("tasks", "{}: item {}: answerKey '{}' is no choice's label", file.string(), i + 1,
           answer);
    items.push_back(SharedContextItem(
        Field(row, "id", file, i),
        "Question: " + Field(question, "stem", file, i) + "\nAnswer:", std::move(choices), gold));
  }
  return items;
}

std::vector<McItem> ReadPiqa(const fs::path& jsonl, const fs::path& labels) {
  const std::vector<JsonLine> rows = ReadJsonLines(jsonl);
  std::ifstream in(labels);
  if (!in) Fail("tasks", "cannot open '{}'", labels.string());
  std::vector<int> golds;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line != "0" && line != "1") {
      Fail("tasks", "{}:{}: a label must be 0 or 1, got '{}'", labels.string(), golds.size() + 1,
           line);
    }
    golds.push_back(line == "1" ? 1 : 0);
  }
  if (golds.size() != rows.size()) {
    Fail("tasks", "'{}' has {} labels for the {} items of '{}'", labels.string(), golds.size(),
         rows.size(), jsonl.string());
  }
  std::vector<McItem> items;
  items.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    items.push_back(SharedContextItem(
        std::to_string(i), "Question: " + Field(rows[i].value, "goal", jsonl, i) + "\nAnswer:",
        {Field(rows[i].value, "sol1", jsonl, i), Field(rows[i].value, "sol2", jsonl, i)},
        golds[i]));
  }
  return items;
}

std::vector<McItem> ReadWinogrande(const fs::path& file) {
  const std::vector<JsonLine> rows = ReadJsonLines(file);
  std::vector<McItem> items;
  items.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string sentence = Field(rows[i].value, "sentence", file, i);
    const size_t blank = sentence.find('_');
    if (blank == std::string::npos)
      Fail("tasks", "{}: item {}: the sentence has no '_'", file.string(), i + 1);
    const std::string answer = Field(rows[i].value, "answer", file, i);
    if (answer != "1" && answer != "2") {
      Fail("tasks", "{}: item {}: answer must be \"1\" or \"2\", got '{}'", file.string(), i + 1,
           answer);
    }
    std::string rest = StripWhitespace(sentence.substr(blank + 1));
    rest.insert(rest.begin(), ' ');
    McItem item;
    item.id = Field(rows[i].value, "qID", file, i);
    for (const char* key : {"option1", "option2"}) {
      const std::string option = Field(rows[i].value, key, file, i);
      item.requests.push_back({sentence.substr(0, blank) + option, rest});
      item.choices.push_back(option);
    }
    item.gold = answer == "1" ? 0 : 1;
    items.push_back(std::move(item));
  }
  return items;
}

std::unique_ptr<Task> MakeMultipleChoiceTask(std::string name, std::vector<McItem> items, int64_t n,
                                             uint32_t seed, bool normalized) {
  return std::make_unique<MultipleChoiceTask>(std::move(name), std::move(items), n, seed,
                                              normalized);
}

}  // namespace proctor
