#include "eval/tasks/ifeval.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "eval/tasks/answer_extraction.h"
#include "eval/tasks/task_data.h"
#include "text/langdetect.h"
#include "text/punkt.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor {
namespace {

std::string Verdicts(const std::vector<bool>& verdicts) {
  std::string out;
  for (bool v : verdicts) out += v ? '1' : '0';
  return out;
}

std::string JoinPaths(const std::vector<std::filesystem::path>& paths) {
  std::string out;
  for (const auto& path : paths) out += (out.empty() ? "" : ", ") + path.string();
  return out;
}

int64_t CountTrue(const std::vector<bool>& verdicts) {
  return static_cast<int64_t>(std::count(verdicts.begin(), verdicts.end(), true));
}

class IfevalTask : public Task {
 public:
  IfevalTask(std::vector<IfevalItem> items, int64_t n, uint32_t seed, bool chat,
             IfevalResources resources)
      : items_(std::move(items)),
        picks_(SampleTaskItems(static_cast<int64_t>(items_.size()), n, seed)),
        n_(n),
        seed_(seed),
        chat_(chat),
        resources_(std::move(resources)) {
    const IfevalTools tools{.punkt = resources_.punkt.get(),
                            .language_detector = resources_.language_detector.get()};
    for (const IfevalItem& item : items_) {
      std::vector<InstructionCheck> checks;
      for (const IfevalInstruction& instruction : item.instructions) {
        checks.push_back(MakeInstructionCheck(instruction, tools));
      }
      checks_.push_back(std::move(checks));
    }
  }

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override {
    return fmt::format("{}", items_[static_cast<size_t>(picks_[static_cast<size_t>(i)])].key);
  }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const size_t index = static_cast<size_t>(picks_[static_cast<size_t>(i)]);
    const IfevalItem& item = items_[index];
    ItemRecord record;
    record.id = ItemId(i);
    record.prompt = item.prompt;
    for (const IfevalInstruction& instruction : item.instructions) {
      if (!record.expected.empty()) record.expected += ",";
      record.expected += instruction.id;
    }
    CompletionRequest request;
    request.max_tokens = kIfevalMaxTokens;
    if (chat_) {
      request.chat = true;
      request.messages = UserTurn(item.prompt);
      request.enable_thinking = false;
    } else {
      request.prompt = item.prompt;
    }
    const std::optional<CompletionResult> reply = Ask(client, request, &record);
    if (!reply) return record;
    record.completion = reply->text;
    const IfevalVerdict verdict =
        CheckIfevalResponse(checks_[index], AnswerAfterThinking(reply->text));
    record.extracted =
        fmt::format("strict {} loose {}", Verdicts(verdict.strict), Verdicts(verdict.loose));
    record.outcome = verdict.strict_all() ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    const int64_t count = static_cast<int64_t>(item.instructions.size());
    record.tallies = {{"loose", {verdict.loose_all() ? 1 : 0, 1}},
                      {"instructions strict", {CountTrue(verdict.strict), count}},
                      {"instructions loose", {CountTrue(verdict.loose), count}}};
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"prompt", chat_ ? "chat (one user turn, generation prompt, thinking off)"
                             : "raw text (no chat template)"},
            {"max_tokens", kIfevalMaxTokens},
            {"decoding", "greedy"},
            {"scoring", "prompt-level strict (accuracy); loose and instruction-level in tallies"},
            {"punkt", resources_.punkt_source},
            {"punkt_trained", resources_.punkt_trained},
            {"langdetect", resources_.langdetect_source},
            {"langdetect_seed", 0},
            {"n", n_},
            {"seed", seed_}};
  }

  std::string Note() const override {
    std::string note;
    if (!chat_) note = "ifeval: no chat template, so each prompt is asked as raw text";
    if (!resources_.punkt_trained) {
      if (!note.empty()) note += "; ";
      note +=
          "ifeval: nltk's punkt_tab/english was not found ($NLTK_DATA, ~/nltk_data, nltk's system "
          "folders), so number_sentences and capital_word_frequency count sentences with "
          "untrained Punkt, where lm-eval uses those English parameters (give --punkt-dir)";
    }
    return note;
  }

 private:
  std::string name_ = "ifeval";
  std::vector<IfevalItem> items_;
  std::vector<int64_t> picks_;
  int64_t n_;
  uint32_t seed_;
  bool chat_;
  IfevalResources resources_;
  std::vector<std::vector<InstructionCheck>> checks_;  // per item, in instruction order
};

}  // namespace

std::vector<IfevalItem> ReadIfeval(const std::filesystem::path& file) {
  std::vector<IfevalItem> items;
  for (const JsonLine& line : ReadJsonLines(file)) {
    const auto& row = line.value;
    auto bad = [&](const std::string& why) {
      Fail("tasks", "{}:{}: {} (expected key, prompt, instruction_id_list and kwargs)",
           file.string(), line.line, why);
    };
    if (!row.contains("key") || !row["key"].is_number_integer()) bad("no integer 'key'");
    if (!row.contains("prompt") || !row["prompt"].is_string()) bad("no string 'prompt'");
    if (!row.contains("instruction_id_list") || !row["instruction_id_list"].is_array()) {
      bad("no list 'instruction_id_list'");
    }
    if (!row.contains("kwargs") || !row["kwargs"].is_array() ||
        row["kwargs"].size() != row["instruction_id_list"].size()) {
      bad("'kwargs' must be a list as long as instruction_id_list");
    }
    IfevalItem item;
    item.key = row["key"].get<int64_t>();
    item.prompt = row["prompt"].get<std::string>();
    for (size_t i = 0; i < row["kwargs"].size(); ++i) {
      if (!row["instruction_id_list"][i].is_string()) bad("an instruction id is not a string");
      IfevalInstruction instruction{.id = row["instruction_id_list"][i].get<std::string>(),
                                    .kwargs = nlohmann::json(row["kwargs"][i])};
      // The id and kwargs are checked here, so a bad row is named by its line.
      try {
        MakeInstructionCheck(instruction, IfevalTools{});
      } catch (const Error& e) {
        bad(e.what());
      }
      item.instructions.push_back(std::move(instruction));
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) Fail("tasks", "{}: no IFEval prompts", file.string());
  return items;
}

IfevalResources LoadIfevalResources(const std::filesystem::path& punkt_dir,
                                    const std::filesystem::path& langdetect_dir) {
  IfevalResources resources;
  std::optional<std::filesystem::path> punkt = punkt_dir;
  std::vector<std::filesystem::path> searched;
  if (punkt_dir.empty()) punkt = text::FindPunktTab("english", &searched);
  if (punkt) {
    resources.punkt = std::make_shared<text::PunktSentenceTokenizer>(text::ReadPunktTab(*punkt));
    resources.punkt_source = punkt->string();
    resources.punkt_trained = true;
  } else {
    resources.punkt = std::make_shared<text::PunktSentenceTokenizer>(text::PunktParameters{});
    resources.punkt_source = fmt::format(
        "untrained: no punkt_tab/english under $NLTK_DATA, ~/nltk_data or nltk's "
        "system folders (searched {})",
        JoinPaths(searched));
  }
  std::optional<std::filesystem::path> langdetect = langdetect_dir;
  searched.clear();
  if (langdetect_dir.empty()) langdetect = text::FindLangdetectPackage(&searched);
  if (!langdetect) {
    Fail("tasks",
         "ifeval needs langdetect's language profiles (Debian's python3-langdetect; "
         "scripts/install-deps.sh installs it), or --langdetect-dir DIR; searched {}",
         JoinPaths(searched));
  }
  resources.language_detector = std::make_shared<text::LanguageDetector>(*langdetect);
  resources.langdetect_source = langdetect->string();
  return resources;
}

std::unique_ptr<Task> MakeIfevalTask(std::vector<IfevalItem> items, int64_t n, uint32_t seed,
                                     bool chat, IfevalResources resources) {
  return std::make_unique<IfevalTask>(std::move(items), n, seed, chat, std::move(resources));
}

}  // namespace proctor
