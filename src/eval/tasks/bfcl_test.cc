#include "eval/tasks/bfcl.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "eval/clients/scripted_client.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

TEST(ExtractFunctionCalls, EveryDocumentedForm) {
  const auto one = [](std::string_view text) {
    const std::vector<FunctionCall> calls = ExtractFunctionCalls(text);
    return calls.size() == 1 ? calls[0].name + " " + calls[0].arguments.dump() : std::string("?");
  };
  EXPECT_EQ(one("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"),
            "f {\"a\":1}");
  EXPECT_EQ(one("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}</tool_call>"),
            "f {\"a\":[1,2]}");  // arguments as a JSON string
  EXPECT_EQ(one("<tool_call>\n<function=math.hypot>\n<parameter=x>\n4\n</parameter>\n"
                "<parameter=unit>\ncm\n</parameter>\n</function>\n</tool_call>"),
            "math.hypot {\"unit\":\"cm\",\"x\":4}");
  EXPECT_EQ(one("Sure. <function=g><parameter=s>[\"a\", \"b\"]</parameter></function>"),
            "g {\"s\":[\"a\",\"b\"]}");
  EXPECT_EQ(one("The call is {\"name\": \"h\", \"parameters\": {\"q\": \"x}y\"}} as asked."),
            "h {\"q\":\"x}y\"}");
  EXPECT_EQ(one("<think>{\"name\": \"no\", \"arguments\": {}}</think>[{\"name\": \"yes\", "
                "\"arguments\": {}}]"),
            "yes {}");
  EXPECT_TRUE(ExtractFunctionCalls("I cannot help with that {not json}.").empty());
  EXPECT_EQ(ExtractFunctionCalls("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>"
                                 "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>")
                .size(),
            2u);
}

const OJson kFunction = OJson::parse(R"({
  "name": "geo.distance",
  "parameters": {"type": "dict", "required": ["city", "km"], "properties": {
    "city": {"type": "string"}, "km": {"type": "float"}, "round": {"type": "boolean"},
    "stops": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "dict", "properties": {"mode": {"type": "string"}}}}}})");
const OJson kAnswer = OJson::parse(R"({
  "city": ["New York", "NYC"], "km": [10.0], "round": ["", true],
  "stops": [["Boston", "Albany"], ""], "opts": [{"mode": ["car"]}, ""]})");

BfclVerdict Verdict(const std::string& name, const std::string& arguments) {
  return CheckBfclCall(kFunction, kAnswer,
                       {FunctionCall{.name = name, .arguments = Json::parse(arguments)}})
      .verdict;
}

TEST(CheckBfclCall, HandWrittenAnswers) {
  using V = BfclVerdict;
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "New York", "km": 10.0})"), V::kCorrect);
  // Argument order does not matter; '.' may come back as '_'; an integer is a float.
  EXPECT_EQ(Verdict("geo_distance", R"({"km": 10, "city": "NYC"})"), V::kCorrect);
  // Strings: case, spaces and ,./-_*^ ignored.
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "new-york.", "km": 10})"), V::kCorrect);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "Newark", "km": 10})"), V::kWrongArguments);
  // Types: a string for a float, a number for a string.
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": "10"})"), V::kWrongArguments);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": 5, "km": 10})"), V::kWrongArguments);
  // Optional arguments: given right, given wrong, omitted ("" allows it).
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "round": true})"), V::kCorrect);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "round": false})"),
            V::kWrongArguments);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "stops": ["boston", "ALBANY"]})"),
            V::kCorrect);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "stops": ["Albany", "Boston"]})"),
            V::kWrongArguments);  // a list keeps its order
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "opts": {"mode": "Car"}})"),
            V::kCorrect);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "opts": {"mode": "bike"}})"),
            V::kWrongArguments);
  // Missing required, unexpected parameter, wrong name, no call, two calls.
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC"})"), V::kWrongArguments);
  EXPECT_EQ(Verdict("geo.distance", R"({"city": "NYC", "km": 10, "x": 1})"), V::kWrongArguments);
  EXPECT_EQ(Verdict("distance", R"({"city": "NYC", "km": 10})"), V::kWrongName);
  EXPECT_EQ(CheckBfclCall(kFunction, kAnswer, {}).verdict, V::kNoCall);
  const FunctionCall call{.name = "geo.distance", .arguments = Json::parse(R"({"city": "NYC"})")};
  EXPECT_EQ(CheckBfclCall(kFunction, kAnswer, {call, call}).verdict, V::kWrongCount);
}

TEST(BfclTool, SchemaTypesBecomeJsonSchemaTypes) {
  const OJson tool = BfclTool(kFunction);
  EXPECT_EQ(tool["type"], "function");
  EXPECT_EQ(tool["function"]["parameters"]["type"], "object");
  EXPECT_EQ(tool["function"]["parameters"]["properties"]["km"]["type"], "number");
  EXPECT_EQ(tool["function"]["parameters"]["properties"]["opts"]["type"], "object");
  EXPECT_EQ(tool["function"]["parameters"]["properties"]["stops"]["items"]["type"], "string");
}

TEST(BfclTask, ToolsReachTheClientAndVerdictsBecomeGroups) {
  BfclItem item{.id = "simple_x",
                .question = "How far to NYC?",
                .function = kFunction,
                .possible_answer = kAnswer};
  std::vector<BfclItem> items(4, item);
  for (int i = 0; i < 4; ++i) items[static_cast<size_t>(i)].id = fmt::format("simple_{}", i);
  int call = 0;
  ScriptedClient client(
      [&](const CompletionRequest&) {
        const std::string right =
            "<tool_call>{\"name\": \"geo.distance\", \"arguments\": {\"city\": \"NYC\", "
            "\"km\": 10}}</tool_call>";
        const std::string answers[] = {right, "I do not know.",
                                       "{\"name\": \"distance\", \"arguments\": {}}", ""};
        CompletionResult r{.text = answers[call++]};
        if (call == 4) {  // a server's structured tool call
          r.tool_calls = Json::array(
              {{{"name", "geo.distance"}, {"arguments", "{\"city\": \"Boston\", \"km\": 1}"}}});
        }
        return r;
      },
      [](const ChoiceRequest&) { return ChoiceResult{}; });
  const auto task = MakeBfclTask(items, 0, 42, "tools");
  std::map<std::string, int> groups;
  int correct = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const ItemRecord record = task->Run(i, client);
    ++groups[record.group];
    correct += record.outcome == ItemOutcome::kCorrect ? 1 : 0;
  }
  EXPECT_EQ(correct, 1);
  EXPECT_EQ(groups,
            (std::map<std::string, int>{
                {"correct", 1}, {"no-call", 1}, {"wrong-name", 1}, {"wrong-arguments", 1}}));
  ASSERT_EQ(client.completions.size(), 4u);
  EXPECT_TRUE(client.completions[0].chat);
  EXPECT_EQ(client.completions[0].tools, OJson::array({BfclTool(kFunction)}));
  EXPECT_EQ(client.completions[0].messages[0]["content"], "How far to NYC?");
  EXPECT_EQ(client.completions[0].max_tokens, kBfclMaxTokens);
  // Without tool support the function is described in the text.
  ScriptedClient plain([](const CompletionRequest&) { return CompletionResult{}; },
                       [](const ChoiceRequest&) { return ChoiceResult{}; });
  MakeBfclTask(items, 0, 42, "text")->Run(0, plain);
  EXPECT_TRUE(plain.completions[0].tools.is_null());
  EXPECT_EQ(plain.completions[0].messages[0]["content"], BfclTextualPrompt(items[0]));
}

// Variations of the right call for one item: each one a case for both checkers.
std::vector<std::pair<std::string, std::vector<FunctionCall>>> Variations(const BfclItem& item) {
  const std::string name = item.function["name"].get<std::string>();
  const Json answer = Json::parse(item.possible_answer.dump());
  Json right = Json::object(), minimal = Json::object(), second = Json::object();
  for (const auto& [param, allowed] : answer.items()) {
    const Json* first = nullptr;
    const Json* other = nullptr;
    for (const Json& value : allowed) {
      if (value == Json("")) continue;
      if (first == nullptr) {
        first = &value;
      } else if (other == nullptr) {
        other = &value;
      }
    }
    if (first == nullptr) continue;  // omitted is the only answer
    right[param] = *first;
    second[param] = other != nullptr ? *other : *first;
    bool optional = false;
    for (const Json& value : allowed) optional = optional || value == Json("");
    if (!optional) minimal[param] = *first;
  }
  std::vector<std::pair<std::string, std::vector<FunctionCall>>> out;
  const auto add = [&](const std::string& what, const std::string& n, const Json& args) {
    out.push_back({what, {FunctionCall{.name = n, .arguments = args}}});
  };
  add("right", name, right);
  add("second answers", name, second);
  add("minimal", name, minimal);
  add("wrong name", name + "_v2", right);
  Json extra = right;
  extra["zz_extra"] = 1;
  add("extra parameter", name, extra);
  if (!right.empty()) {
    const std::string first_param = right.begin().key();
    Json missing = right;
    missing.erase(first_param);
    add("missing first", name, missing);
    Json retyped = right;
    retyped[first_param] = right[first_param].is_string() ? Json(12345) : Json("12345");
    add("wrong type", name, retyped);
    Json shouted = right;
    for (auto& [param, value] : shouted.items()) {
      if (value.is_string()) {
        std::string s = value.get<std::string>();
        for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        value = " " + s + "-";
      } else if (value.is_number_float() &&
                 value.get<double>() == std::floor(value.get<double>())) {
        value = static_cast<int64_t>(value.get<double>());
      } else if (value.is_number_integer()) {
        value = value.get<double>();
      }
    }
    add("case, punctuation and number kinds", name, shouted);
  }
  out.push_back({"two calls",
                 {FunctionCall{.name = name, .arguments = right},
                  FunctionCall{.name = name, .arguments = right}}});
  return out;
}

// Every item of BFCL v3 simple, each with ten variations of its right call, checked by
// proctor and by BFCL's own ast_checker (bfcl-eval, tools/oracle/bfcl_check.py): the same
// verdicts.
TEST(BfclOracle, VerdictsEqualBfclsOwnAstChecker) {
  const fs::path dir = testing::FixturesDir() / "bfcl";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  if (const std::string problem = testing::OraclesProblem({"python"}); !problem.empty()) {
    GTEST_SKIP() << "oracle unavailable: " << problem;
  }
  const std::vector<BfclItem> items = ReadBfcl(dir);
  ASSERT_EQ(items.size(), 400u);
  Json cases = Json::array();
  std::vector<std::pair<std::string, BfclVerdict>> mine;
  for (const BfclItem& item : items) {
    for (const auto& [what, calls] : Variations(item)) {
      Json calls_json = Json::array();
      for (const FunctionCall& call : calls) calls_json.push_back({{call.name, call.arguments}});
      cases.push_back(
          {{"function", Json::parse(item.function.dump())},
           {"ground_truth",
            {{item.function["name"].get<std::string>(), Json::parse(item.possible_answer.dump())}}},
           {"calls", calls_json}});
      mine.push_back({item.id + " " + what,
                      CheckBfclCall(item.function, item.possible_answer, calls).verdict});
    }
  }
  const testing::TempDir tmp;
  std::ofstream(tmp.path() / "cases.json") << cases.dump();
  const testing::OracleSetup& python = testing::Oracles("python");
  const testing::CommandOutput out = testing::RunCommand(fmt::format(
      "{} {}/tools/oracle/bfcl_check.py {} {}", python.Path("python"), PROCTOR_SOURCE_DIR,
      python.Path("bfcl_eval"), (tmp.path() / "cases.json").string()));
  ASSERT_EQ(out.status, 0) << out.output.substr(0, 3000);
  const Json theirs = Json::parse(out.output);
  ASSERT_EQ(theirs.size(), mine.size());
  size_t same = 0, correct = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const bool valid = theirs[i][0].get<bool>();
    const std::string type = theirs[i][1].get<std::string>();
    const BfclVerdict expected = valid                               ? BfclVerdict::kCorrect
                                 : type.ends_with("wrong_count")     ? BfclVerdict::kWrongCount
                                 : type.ends_with("wrong_func_name") ? BfclVerdict::kWrongName
                                                                     : BfclVerdict::kWrongArguments;
    if (mine[i].second == expected) {
      ++same;
    } else {
      ADD_FAILURE() << mine[i].first << ": proctor " << BfclVerdictName(mine[i].second) << ", BFCL "
                    << type << " (" << cases[i].dump() << ")";
    }
    correct += valid ? 1 : 0;
  }
  std::printf("[ bfcl-eval ] %zu of %zu verdicts identical (%zu calls correct)\n", same,
              mine.size(), correct);
}

}  // namespace
}  // namespace proctor
