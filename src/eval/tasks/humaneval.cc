#include "eval/tasks/humaneval.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/sandbox/sandbox.h"
#include "eval/tasks/answer_extraction.h"
#include "eval/tasks/task_data.h"
#include "util/error.h"

namespace proctor {

std::vector<HumanEvalProblem> ReadHumanEval(const std::filesystem::path& file) {
  std::vector<HumanEvalProblem> problems;
  for (const JsonLine& line : ReadJsonLines(file)) {
    const nlohmann::ordered_json& row = line.value;
    HumanEvalProblem p;
    for (auto [key, field] : {std::pair{"task_id", &p.task_id},
                              {"prompt", &p.prompt},
                              {"test", &p.test},
                              {"entry_point", &p.entry_point},
                              {"canonical_solution", &p.canonical_solution}}) {
      if (!row.contains(key) || !row[key].is_string()) {
        Fail("tasks", "{}:{}: expected a string \"{}\"", file.string(), line.line, key);
      }
      *field = row[key].get<std::string>();
    }
    problems.push_back(std::move(p));
  }
  return problems;
}

std::string HumanEvalChatPrompt(const HumanEvalProblem& problem) {
  return fmt::format(
      "Complete the following Python function. Answer with the whole function (with the imports "
      "it needs) in one ```python code block.\n\n```python\n{}\n```",
      problem.prompt);
}

namespace {

// Where a raw completion of a HumanEval prompt ends (the documented truncation).
const std::vector<std::string>& RawStops() {
  static const std::vector<std::string> stops = {"\nclass ", "\ndef ", "\n#", "\nif __name__",
                                                 "\nprint("};
  return stops;
}

}  // namespace

std::string HumanEvalCompletion(std::string_view answer, bool chat) {
  std::string_view text = AnswerAfterThinking(answer);
  if (chat) {
    // The last fenced block: the text between the last "```" that opens and its closing "```".
    std::string code(text);
    size_t search = 0;
    std::string last;
    bool found = false;
    for (;;) {
      const size_t open = code.find("```", search);
      if (open == std::string::npos) break;
      const size_t line_end = code.find('\n', open);
      if (line_end == std::string::npos) break;
      const size_t close = code.find("```", line_end);
      last = code.substr(line_end + 1,
                         (close == std::string::npos ? code.size() : close) - line_end - 1);
      found = true;
      if (close == std::string::npos) break;
      search = close + 3;
    }
    return found ? last : code;
  }
  size_t cut = text.size();
  for (const std::string& stop : RawStops()) {
    cut = std::min(cut, text.find(stop));
  }
  return std::string(text.substr(0, cut));
}

std::string HumanEvalProgram(const HumanEvalProblem& problem, const std::string& completion) {
  return problem.prompt + completion + "\n" + problem.test + "\n" +
         fmt::format("check({})", problem.entry_point);
}

namespace {

class HumanEvalTask : public Task {
 public:
  HumanEvalTask(std::vector<HumanEvalProblem> problems, int64_t n, uint32_t seed, bool chat,
                bool unsafe)
      : problems_(std::move(problems)),
        picks_(SampleTaskItems(static_cast<int64_t>(problems_.size()), n, seed)),
        n_(n),
        seed_(seed),
        chat_(chat),
        unsafe_(unsafe) {
    if (!unsafe_) {
      if (const std::string problem = SandboxProblem(); !problem.empty()) {
        Fail("tasks",
             "humaneval runs model-written code, and the sandbox does not work here: {}. Install "
             "bubblewrap (Debian: apt-get install bubblewrap), or pass --unsafe-exec to run it "
             "without a sandbox at your own risk.",
             problem);
      }
    }
  }

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override { return Problem(i).task_id; }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const HumanEvalProblem& problem = Problem(i);
    ItemRecord record;
    record.id = problem.task_id;
    record.expected = "pass";
    CompletionRequest request;
    request.max_tokens = kHumanEvalMaxTokens;
    if (chat_) {
      request.chat = true;
      record.prompt = HumanEvalChatPrompt(problem);
      request.messages = UserTurn(record.prompt);
    } else {
      record.prompt = problem.prompt;
      request.prompt = problem.prompt;
      request.stop = RawStops();
    }
    const std::optional<CompletionResult> answer = Ask(client, request, &record);
    if (!answer) return record;
    const CompletionResult& result = *answer;
    record.completion = result.text;
    record.extracted = HumanEvalCompletion(result.text, chat_);
    const std::string program = HumanEvalProgram(problem, record.extracted);
    const SandboxResult run = unsafe_ ? RunPythonUnsandboxed(program) : RunPythonInSandbox(program);
    record.outcome = run.exit_code == 0 ? ItemOutcome::kCorrect : ItemOutcome::kWrong;
    if (run.exit_code != 0) {
      record.error = run.timed_out ? "timed out (10 s)" : run.output.substr(0, 1000);
    }
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"prompt", chat_ ? "chat: the whole function in a python code block"
                             : "raw: complete the prompt"},
            {"max_tokens", kHumanEvalMaxTokens},
            {"execution", unsafe_ ? "UNSANDBOXED (--unsafe-exec)"
                                  : "bubblewrap sandbox: no network, private tmpfs, 512 MB, 10 s"},
            {"n", n_},
            {"seed", seed_}};
  }

  std::string Note() const override {
    std::string note;
    if (!chat_) note = "humaneval: no chat template, so the raw prompt is completed";
    if (unsafe_) {
      note += std::string(note.empty() ? "humaneval: " : "; ") +
              "programs run WITHOUT a sandbox (--unsafe-exec)";
    }
    return note;
  }

 private:
  const HumanEvalProblem& Problem(int64_t i) const {
    return problems_[static_cast<size_t>(picks_[static_cast<size_t>(i)])];
  }

  std::string name_ = "humaneval";
  std::vector<HumanEvalProblem> problems_;
  std::vector<int64_t> picks_;
  int64_t n_;
  uint32_t seed_;
  bool chat_;
  bool unsafe_;
};

}  // namespace

std::unique_ptr<Task> MakeHumanEvalTask(std::vector<HumanEvalProblem> problems, int64_t n,
                                        uint32_t seed, bool chat, bool unsafe) {
  return std::make_unique<HumanEvalTask>(std::move(problems), n, seed, chat, unsafe);
}

}  // namespace proctor
