#include "eval/tasks/bfcl.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>

#include "eval/tasks/answer_extraction.h"
#include "eval/tasks/task_data.h"
#include "util/error.h"

namespace proctor {
namespace fs = std::filesystem;
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

namespace {

// ---- extraction ----

// The JSON value that starts at text[begin] ('{' or '['), by bracket matching outside strings;
// nullopt when it does not close or does not parse.
std::optional<Json> JsonAt(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (--depth == 0) {
        try {
          return Json::parse(text.substr(begin, i - begin + 1));
        } catch (const Json::exception&) {
          return std::nullopt;
        }
      }
    }
  }
  return std::nullopt;
}

// {"name", "arguments" | "parameters"} (arguments possibly a JSON string) -> a call.
std::optional<FunctionCall> CallFromJson(const Json& value) {
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string()) {
    return std::nullopt;
  }
  FunctionCall call{.name = value["name"].get<std::string>(), .arguments = Json::object()};
  for (const char* key : {"arguments", "parameters"}) {
    if (!value.contains(key)) continue;
    Json arguments = value[key];
    if (arguments.is_string()) {
      try {
        arguments = Json::parse(arguments.get<std::string>());
      } catch (const Json::exception&) {
        return std::nullopt;
      }
    }
    if (!arguments.is_object()) return std::nullopt;
    call.arguments = std::move(arguments);
    break;
  }
  return call;
}

void AddCalls(const Json& value, std::vector<FunctionCall>* calls) {
  if (value.is_array()) {
    for (const Json& item : value) AddCalls(item, calls);
    return;
  }
  if (auto call = CallFromJson(value)) calls->push_back(*std::move(call));
}

// <function=NAME> <parameter=P>VALUE</parameter> ... </function> blocks of `text`.
std::vector<FunctionCall> XmlCalls(std::string_view text) {
  std::vector<FunctionCall> calls;
  constexpr std::string_view kOpen = "<function=", kClose = "</function>";
  constexpr std::string_view kParam = "<parameter=", kParamClose = "</parameter>";
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at)) {
    const size_t name_end = text.find('>', at);
    if (name_end == std::string_view::npos) break;
    FunctionCall call;
    call.name = StripWhitespace(text.substr(at + kOpen.size(), name_end - at - kOpen.size()));
    const size_t end = std::min(text.find(kClose, name_end), text.size());
    const std::string_view body = text.substr(name_end + 1, end - name_end - 1);
    for (size_t p = body.find(kParam); p != std::string_view::npos; p = body.find(kParam, p)) {
      const size_t key_end = body.find('>', p);
      if (key_end == std::string_view::npos) break;
      const std::string key =
          StripWhitespace(body.substr(p + kParam.size(), key_end - p - kParam.size()));
      const size_t value_end = std::min(body.find(kParamClose, key_end), body.size());
      const std::string raw = StripWhitespace(body.substr(key_end + 1, value_end - key_end - 1));
      try {
        call.arguments[key] = Json::parse(raw);
      } catch (const Json::exception&) {
        call.arguments[key] = raw;
      }
      p = value_end;
    }
    calls.push_back(std::move(call));
    at = end;
  }
  return calls;
}

// ---- the AST check ----

// Python's == across JSON values: numbers (booleans as 0/1) by value, the rest structurally.
bool PyEquals(const Json& a, const Json& b) {
  const bool a_num = a.is_number() || a.is_boolean(), b_num = b.is_number() || b.is_boolean();
  if (a_num && b_num) {
    const auto value = [](const Json& v) {
      return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
    };
    return value(a) == value(b);
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!PyEquals(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [key, value] : a.items()) {
      if (!b.contains(key) || !PyEquals(value, b[key])) return false;
    }
    return true;
  }
  return a == b;
}

bool PyIn(const Json& value, const Json& list) {
  for (const Json& item : list) {
    if (PyEquals(value, item)) return true;
  }
  return false;
}

std::string Standardize(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == ' ' || c == ',' || c == '.' || c == '/' || c == '-' || c == '_' || c == '*' ||
        c == '^') {
      continue;
    }
    out += c == '\'' ? '"' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// A JSON value's Python type under BFCL's mapping.
enum class PyType { kStr, kInt, kFloat, kBool, kList, kDict, kNone };

PyType TypeOf(const Json& v) {
  if (v.is_string()) return PyType::kStr;
  if (v.is_boolean()) return PyType::kBool;
  if (v.is_number_integer()) return PyType::kInt;
  if (v.is_number_float()) return PyType::kFloat;
  if (v.is_array()) return PyType::kList;
  if (v.is_object()) return PyType::kDict;
  return PyType::kNone;
}

PyType DeclaredType(const std::string& type) {
  if (type == "integer") return PyType::kInt;
  if (type == "float") return PyType::kFloat;
  if (type == "boolean") return PyType::kBool;
  if (type == "array" || type == "tuple") return PyType::kList;
  if (type == "dict") return PyType::kDict;
  return PyType::kStr;  // string, any
}

// The type of the first possible answer that is not "" (omission); kNone when there is none.
PyType AnswerType(const Json& answers) {
  for (const Json& a : answers) {
    if (!(a.is_string() && a.get<std::string>().empty())) return TypeOf(a);
  }
  return PyType::kNone;
}

Json StandardizedStrings(const Json& list) {
  Json out = Json::array();
  for (const Json& item : list) {
    out.push_back(item.is_string() ? Json(Standardize(item.get<std::string>())) : item);
  }
  return out;
}

// One dict against the allowed dicts (BFCL's dict_checker).
bool DictMatches(const Json& value, const Json& answers) {
  for (const Json& answer : answers) {
    if (answer.is_string() && answer.get<std::string>().empty()) continue;
    if (!answer.is_object()) continue;
    bool ok = true;
    for (const auto& [key, item] : value.items()) {
      if (!answer.contains(key)) {
        ok = false;
        break;
      }
      const Json standardized =
          item.is_string() ? Json(Standardize(item.get<std::string>())) : item;
      if (!PyIn(standardized, StandardizedStrings(answer[key]))) {
        ok = false;
        break;
      }
    }
    for (const auto& [key, allowed] : answer.items()) {
      if (!ok) break;
      if (!value.contains(key) && !PyIn(Json(""), allowed)) ok = false;
    }
    if (ok) return true;
  }
  return false;
}

}  // namespace

std::vector<BfclItem> ReadBfcl(const fs::path& dir) {
  const fs::path questions = dir / "BFCL_v3_simple.json";
  const fs::path answers = dir / "possible_answer" / "BFCL_v3_simple.json";
  // Every row of both files needs a string "id".
  const auto rows_of = [](const fs::path& file) {
    std::vector<JsonLine> rows = ReadJsonLines(file);
    for (const JsonLine& row : rows) {
      if (!row.value.contains("id") || !row.value["id"].is_string()) {
        Fail("tasks", "{}:{}: expected an object with a string \"id\"", file.string(), row.line);
      }
    }
    return rows;
  };
  std::map<std::string, OJson> truth;
  for (JsonLine& row : rows_of(answers)) {
    const std::string id = row.value["id"].get<std::string>();
    truth[id] = std::move(row.value);
  }
  std::vector<BfclItem> items;
  for (const JsonLine& line : rows_of(questions)) {
    const OJson& row = line.value;
    const std::string id = row["id"].get<std::string>();
    if (!row.contains("question") || !row["question"].is_array() || row["question"].empty() ||
        !row["question"][0].is_array() || row["question"][0].empty() ||
        !row["question"][0][0].contains("content") || !row.contains("function") ||
        !row["function"].is_array() || row["function"].size() != 1) {
      Fail("tasks", "{}: item {}: expected one question turn and one function", questions.string(),
           id);
    }
    const auto found = truth.find(id);
    if (found == truth.end())
      Fail("tasks", "{}: no possible answer for item {}", answers.string(), id);
    const OJson& ground = found->second["ground_truth"];
    if (!ground.is_array() || ground.size() != 1 || !ground[0].is_object() ||
        ground[0].size() != 1) {
      Fail("tasks", "{}: item {}: expected one ground-truth call", answers.string(), id);
    }
    BfclItem item;
    item.id = id;
    item.question = row["question"][0][0]["content"].get<std::string>();
    item.function = row["function"][0];
    item.possible_answer = ground[0].begin().value();
    items.push_back(std::move(item));
  }
  return items;
}

OJson BfclTool(const OJson& function) {
  std::function<OJson(const OJson&)> convert = [&](const OJson& schema) {
    if (schema.is_array()) {
      OJson out = OJson::array();
      for (const OJson& item : schema) out.push_back(convert(item));
      return out;
    }
    if (!schema.is_object()) return schema;
    OJson out = OJson::object();
    for (const auto& [key, value] : schema.items()) {
      if (key == "type" && value.is_string()) {
        const std::string type = value.get<std::string>();
        out[key] = type == "dict"    ? "object"
                   : type == "float" ? "number"
                   : type == "tuple" ? "array"
                   : type == "any"   ? "string"
                                     : type;
      } else {
        out[key] = convert(value);
      }
    }
    return out;
  };
  return {{"type", "function"}, {"function", convert(function)}};
}

std::vector<FunctionCall> ExtractFunctionCalls(std::string_view completion) {
  const std::string_view text = AnswerAfterThinking(completion);
  std::vector<FunctionCall> calls;
  constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  for (size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at)) {
    const size_t begin = at + kOpen.size();
    const size_t end = std::min(text.find(kClose, begin), text.size());
    const std::string_view body = text.substr(begin, end - begin);
    const std::vector<FunctionCall> xml = XmlCalls(body);
    if (!xml.empty()) {
      calls.insert(calls.end(), xml.begin(), xml.end());
    } else if (const size_t brace = body.find_first_of("{["); brace != std::string_view::npos) {
      if (const auto value = JsonAt(body, brace)) AddCalls(*value, &calls);
    }
    at = end;
  }
  if (!calls.empty()) return calls;
  calls = XmlCalls(text);
  if (!calls.empty()) return calls;
  for (size_t at = text.find_first_of("{["); at != std::string_view::npos;
       at = text.find_first_of("{[", at + 1)) {
    if (const auto value = JsonAt(text, at)) {
      AddCalls(*value, &calls);
      if (!calls.empty()) return calls;
    }
  }
  return calls;
}

const char* BfclVerdictName(BfclVerdict verdict) {
  switch (verdict) {
    case BfclVerdict::kCorrect:
      return "correct";
    case BfclVerdict::kNoCall:
      return "no-call";
    case BfclVerdict::kWrongCount:
      return "wrong-count";
    case BfclVerdict::kWrongName:
      return "wrong-name";
    case BfclVerdict::kWrongArguments:
      return "wrong-arguments";
  }
  return "?";
}

BfclCheck CheckBfclCall(const OJson& function, const OJson& possible_answer,
                        const std::vector<FunctionCall>& calls) {
  const auto wrong = [](std::string reason) {
    return BfclCheck{.verdict = BfclVerdict::kWrongArguments, .reason = std::move(reason)};
  };
  if (calls.empty()) return {.verdict = BfclVerdict::kNoCall, .reason = "no function call"};
  if (calls.size() != 1) {
    return {.verdict = BfclVerdict::kWrongCount,
            .reason = fmt::format("{} calls, one expected", calls.size())};
  }
  const FunctionCall& call = calls[0];
  const std::string name = function.value("name", "");
  std::string underscored = name;
  std::replace(underscored.begin(), underscored.end(), '.', '_');
  if (call.name != name && call.name != underscored) {
    return {.verdict = BfclVerdict::kWrongName,
            .reason = fmt::format("called '{}', expected '{}'", call.name, name)};
  }
  const OJson& properties = function["parameters"]["properties"];
  const OJson required = function["parameters"].value("required", OJson::array());
  const Json answers = Json::parse(possible_answer.dump());
  for (const OJson& param : required) {
    if (!call.arguments.contains(param.get<std::string>())) {
      return wrong(fmt::format("missing required parameter '{}'", param.get<std::string>()));
    }
  }
  for (const auto& [param, raw_value] : call.arguments.items()) {
    if (!properties.contains(param) || !answers.contains(param)) {
      return wrong(fmt::format("unexpected parameter '{}'", param));
    }
    const Json& allowed = answers[param];
    const std::string declared = properties[param].value("type", "string");
    const PyType expected = DeclaredType(declared);
    Json value = raw_value;
    if (expected == PyType::kFloat && TypeOf(value) == PyType::kInt) {
      value = static_cast<double>(value.get<int64_t>());
    }
    // Types: a value of the declared type, or of the answers' own type (a "variable").
    const PyType answer_type = AnswerType(allowed);
    bool is_variable = answer_type != PyType::kNone && answer_type != expected;
    if (TypeOf(value) == expected) {
      if (expected == PyType::kList && (declared == "array" || declared == "tuple") &&
          properties[param].contains("items")) {
        const PyType inner = DeclaredType(properties[param]["items"].value("type", "string"));
        bool any = allowed.empty();
        for (const Json& candidate : allowed) {
          bool items_ok = true;
          if (candidate.is_array()) {
            for (const Json& element : value) {
              Json e = element;
              if (TypeOf(e) != inner &&
                  !(TypeOf(e) == AnswerType(candidate) && AnswerType(candidate) != PyType::kNone)) {
                items_ok = false;
                break;
              }
            }
          }
          if (items_ok) {
            any = true;
            break;
          }
        }
        if (!any) return wrong(fmt::format("parameter '{}': elements of the wrong type", param));
      }
    } else if (answer_type != PyType::kNone && TypeOf(value) == answer_type) {
      is_variable = true;
    } else {
      return wrong(fmt::format("parameter '{}': expected type {}, got {}", param, declared,
                               value.type_name()));
    }
    if (!is_variable) {
      if (expected == PyType::kDict) {
        if (!DictMatches(value, allowed)) return wrong(fmt::format("parameter '{}': value", param));
        continue;
      }
      if (expected == PyType::kList && properties[param].contains("items") &&
          DeclaredType(properties[param]["items"].value("type", "string")) == PyType::kDict) {
        bool ok = false;
        for (const Json& candidate : allowed) {
          if (!candidate.is_array() || candidate.size() != value.size()) continue;
          ok = true;
          for (size_t i = 0; ok && i < value.size(); ++i) {
            ok = DictMatches(value[i], Json::array({candidate[i]}));
          }
          if (ok) break;
        }
        if (!ok) return wrong(fmt::format("parameter '{}': value", param));
        continue;
      }
      if (expected == PyType::kStr) {
        if (!PyIn(Json(Standardize(value.get<std::string>())), StandardizedStrings(allowed))) {
          return wrong(fmt::format("parameter '{}': '{}' is not among {}", param,
                                   value.get<std::string>(), allowed.dump()));
        }
        continue;
      }
      if (expected == PyType::kList) {
        Json standardized_answers = Json::array();
        for (const Json& candidate : allowed) {
          standardized_answers.push_back(candidate.is_array() ? StandardizedStrings(candidate)
                                                              : Json::array());
        }
        if (!PyIn(StandardizedStrings(value), standardized_answers)) {
          return wrong(fmt::format("parameter '{}': {} is not among {}", param, value.dump(),
                                   allowed.dump()));
        }
        continue;
      }
    }
    if (!PyIn(value, allowed)) {
      return wrong(
          fmt::format("parameter '{}': {} is not among {}", param, value.dump(), allowed.dump()));
    }
  }
  for (const auto& [param, allowed] : answers.items()) {
    if (!call.arguments.contains(param) && !PyIn(Json(""), allowed)) {
      return wrong(fmt::format("parameter '{}' omitted but not optional", param));
    }
  }
  return {};
}

std::string BfclTextualPrompt(const BfclItem& item) {
  return fmt::format(
      "You can call this function (JSON Schema):\n{}\n\nTo call it, answer with only a JSON "
      "object: {{\"name\": FUNCTION_NAME, \"arguments\": {{ARGUMENT: VALUE, ...}}}}.\n\n"
      "Question: {}",
      BfclTool(item.function)["function"].dump(2), item.question);
}

namespace {

class BfclTask : public Task {
 public:
  BfclTask(std::vector<BfclItem> items, int64_t n, uint32_t seed, std::string mode)
      : items_(std::move(items)),
        picks_(SampleTaskItems(static_cast<int64_t>(items_.size()), n, seed)),
        n_(n),
        seed_(seed),
        mode_(std::move(mode)) {}

  const std::string& name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(picks_.size()); }
  std::string ItemId(int64_t i) const override { return Item(i).id; }
  bool ShowsGroups() const override { return true; }

  ItemRecord Run(int64_t i, CompletionClient& client) const override {
    const BfclItem& item = Item(i);
    ItemRecord record;
    record.id = item.id;
    record.expected =
        OJson{{item.function["name"].get<std::string>(), item.possible_answer}}.dump();
    CompletionRequest request;
    request.max_tokens = kBfclMaxTokens;
    if (mode_ == "raw") {
      record.prompt = BfclTextualPrompt(item);
      request.prompt = record.prompt + "\nAnswer:";
    } else {
      request.chat = true;
      record.prompt = mode_ == "tools" ? item.question : BfclTextualPrompt(item);
      request.messages = UserTurn(record.prompt);
      if (mode_ == "tools") request.tools = OJson::array({BfclTool(item.function)});
    }
    const std::optional<CompletionResult> answer = Ask(client, request, &record);
    if (!answer) return record;
    const CompletionResult& result = *answer;
    record.completion = result.text;
    std::vector<FunctionCall> calls;
    for (const Json& call : result.tool_calls) AddCalls(call, &calls);
    if (calls.empty()) calls = ExtractFunctionCalls(result.text);
    OJson extracted = OJson::array();
    for (const FunctionCall& call : calls) {
      extracted.push_back(
          {{"name", call.name}, {"arguments", OJson::parse(call.arguments.dump())}});
    }
    record.extracted = calls.empty() ? "" : extracted.dump();
    const BfclCheck check = CheckBfclCall(item.function, item.possible_answer, calls);
    record.group = BfclVerdictName(check.verdict);
    record.outcome = check.verdict == BfclVerdict::kCorrect  ? ItemOutcome::kCorrect
                     : check.verdict == BfclVerdict::kNoCall ? ItemOutcome::kUnscorable
                                                             : ItemOutcome::kWrong;
    if (!check.reason.empty()) record.error = check.reason;
    return record;
  }

  nlohmann::ordered_json Settings() const override {
    return {{"prompt", mode_ == "tools"  ? "chat, the function as a tool of the chat template"
                       : mode_ == "text" ? "chat, the function described in the user turn"
                                         : "raw text, the function described"},
            {"max_tokens", kBfclMaxTokens},
            {"n", n_},
            {"seed", seed_}};
  }

  std::string Note() const override {
    if (mode_ == "tools") return {};
    return mode_ == "text"
               ? "bfcl: the chat template does not render tools, so the function is described "
                 "in the user turn"
               : "bfcl: no chat template, so the prompt is raw text describing the function";
  }

 private:
  const BfclItem& Item(int64_t i) const {
    return items_[static_cast<size_t>(picks_[static_cast<size_t>(i)])];
  }

  std::string name_ = "bfcl";
  std::vector<BfclItem> items_;
  std::vector<int64_t> picks_;
  int64_t n_;
  uint32_t seed_;
  std::string mode_;
};

}  // namespace

std::unique_ptr<Task> MakeBfclTask(std::vector<BfclItem> items, int64_t n, uint32_t seed,
                                   std::string mode) {
  return std::make_unique<BfclTask>(std::move(items), n, seed, std::move(mode));
}

}  // namespace proctor
