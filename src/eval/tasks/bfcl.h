// BFCL v3 "simple" (Berkeley Function-Calling Leaderboard): one question, one function; the
// model's call is extracted from its answer and matched against the possible answers as BFCL's
// AST checker does for Python (docs/task-evals.md).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "eval/tasks/task.h"

namespace proctor {

struct BfclItem {
  std::string id;
  std::string question;                    // the user turn
  nlohmann::ordered_json function;         // {name, description, parameters} as BFCL writes it
  nlohmann::ordered_json possible_answer;  // {PARAM: [allowed values...]} ("" = may be omitted)
};

// DIR/BFCL_v3_simple.json and DIR/possible_answer/BFCL_v3_simple.json (JSONL, matched by id).
std::vector<BfclItem> ReadBfcl(const std::filesystem::path& dir);

// The function as an OpenAI tool: {"type": "function", "function": {...}}, its schema's BFCL
// types mapped to JSON Schema ones (dict -> object, float -> number, tuple -> array, any ->
// string) at every level.
nlohmann::ordered_json BfclTool(const nlohmann::ordered_json& function);

// A function call read out of an answer: {"name": ..., "arguments": {...}}.
struct FunctionCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

// Every call in the text after thinking: <tool_call>JSON</tool_call> blocks, else
// <function=NAME><parameter=P>VALUE</parameter></function> blocks (a value is JSON when it
// parses, else its trimmed text), else the first bare JSON object (or list of objects) with
// "name" and "arguments" (or "parameters"). Arguments given as a JSON string are parsed.
std::vector<FunctionCall> ExtractFunctionCalls(std::string_view completion);

enum class BfclVerdict { kCorrect, kNoCall, kWrongCount, kWrongName, kWrongArguments };
const char* BfclVerdictName(BfclVerdict verdict);  // "correct", "no-call", "wrong-count", ...

struct BfclCheck {
  BfclVerdict verdict = BfclVerdict::kCorrect;
  std::string reason;  // why not correct
};

// BFCL's simple-function AST check (Python rules): one call; the name (a '.' may come back as
// '_'); required parameters present; no parameter outside the schema or the possible answers;
// each value of the declared type (an integer is a float; a string where the answer lists
// strings for another type is a "variable") and among the possible answers (strings and lists
// of strings compared lowercased without spaces and ,./-_*^, ' as "; dicts key by key); every
// omitted parameter allows "".
BfclCheck CheckBfclCall(const nlohmann::ordered_json& function,
                        const nlohmann::ordered_json& possible_answer,
                        const std::vector<FunctionCall>& calls);

// The prompt without tool support in the template: the tools as JSON and how to answer.
std::string BfclTextualPrompt(const BfclItem& item);

inline constexpr int kBfclMaxTokens = 512;

// `mode`: "tools" (the chat template renders the tools), "text" (a chat turn with
// BfclTextualPrompt), "raw" (no chat: BfclTextualPrompt + "\nAnswer:").
std::unique_ptr<Task> MakeBfclTask(std::vector<BfclItem> items, int64_t n, uint32_t seed,
                                   std::string mode);

}  // namespace proctor
