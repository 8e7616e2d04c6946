#include "eval/runners/sharded_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "util/error.h"

namespace proctor {
namespace {

struct VerbShape {
  const char* verb;
  const char* output_flag;
  bool output_is_dir;
  std::array<const char*, 3> refused;  // flags the verb's --shard does not go with
};

constexpr std::array<VerbShape, 4> kShardable = {{
    {"dump", "--out", true, {"--seq-start", "--seq-end", "--resume"}},
    {"eval", "--json", false, {"--outputs", "--resume", "--reference-logits"}},
    {"kl", "--json", false, {nullptr, nullptr, nullptr}},
    {"ppl", "--json", false, {nullptr, nullptr, nullptr}},
}};

}  // namespace

std::string ShellQuote(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=.,/:@%") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string quoted(1, '\'');
  for (const char c : text) {
    if (c == '\'') {
      quoted.append("'\\''");
    } else {
      quoted.push_back(c);
    }
  }
  quoted.push_back('\'');
  return quoted;
}

ShardableCommand ParseShardableCommand(const std::vector<std::string>& command,
                                       const char* component) {
  if (command.empty()) {
    Fail(component,
         "no command to shard: give the verb and its arguments after --, e.g. `proctor {} "
         "--shards 4 -- dump --teacher m.gguf --corpus c/ --out d/`",
         component);
  }
  const auto shape = std::find_if(kShardable.begin(), kShardable.end(),
                                  [&](const VerbShape& s) { return command[0] == s.verb; });
  if (shape == kShardable.end()) {
    Fail(component,
         "`{}` does not shard: the verbs that take --shard I/N are dump, eval, kl and ppl",
         command[0]);
  }
  ShardableCommand parsed{.verb = command[0], .output_is_dir = shape->output_is_dir};
  const std::string flag = shape->output_flag;
  // The arguments, with "--flag=value" split in two.
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    const size_t equals = arg.find('=');
    if (arg.starts_with("--") && equals != std::string::npos) {
      parsed.args.push_back(arg.substr(0, equals));
      parsed.args.push_back(arg.substr(equals + 1));
    } else {
      parsed.args.push_back(arg);
    }
  }
  for (size_t i = 0; i < parsed.args.size(); ++i) {
    const std::string& arg = parsed.args[i];
    if (arg == "--shard") {
      Fail(component,
           "the command gives --shard itself; `proctor {}` adds --shard I/N to each task",
           component);
    }
    for (const char* refused : shape->refused) {
      if (refused != nullptr && arg == refused) {
        Fail(component, "`{} --shard` does not go with {}", parsed.verb, refused);
      }
    }
    if (arg == flag) {
      if (i + 1 >= parsed.args.size()) Fail(component, "{} needs a value", flag);
      parsed.output = parsed.args[i + 1];
      parsed.output_index = i + 1;
    }
  }
  if (parsed.output.empty()) {
    Fail(component, "`{}` needs {} {}: where the merge writes the whole run's {}", parsed.verb,
         flag, shape->output_is_dir ? "DIR" : "FILE",
         shape->output_is_dir ? "dump" : "results file");
  }
  return parsed;
}

std::filesystem::path ShardsDir(const ShardableCommand& command, const std::filesystem::path& dir) {
  return dir.empty() ? std::filesystem::path(fmt::format("{}.shards", command.output)) : dir;
}

std::vector<std::filesystem::path> ShardParts(const ShardableCommand& command,
                                              const std::filesystem::path& dir, int64_t shards) {
  std::vector<std::filesystem::path> parts;
  parts.reserve(static_cast<size_t>(shards));
  for (int64_t i = 0; i < shards; ++i) {
    parts.push_back(dir / fmt::format("part-{}{}", i, command.output_is_dir ? "" : ".json"));
  }
  return parts;
}

std::string ShardTaskCommand(const ShardableCommand& command, const std::filesystem::path& proctor,
                             const std::filesystem::path& dir, std::string_view threads,
                             std::string_view index_variable, int64_t shards) {
  const std::string index = fmt::format("\"${{{}}}\"", index_variable);
  std::string line =
      fmt::format("{} -t {} {}", ShellQuote(proctor.string()), threads, ShellQuote(command.verb));
  for (size_t i = 0; i < command.args.size(); ++i) {
    line.append(" ");
    if (i == command.output_index) {
      line.append(ShellQuote((dir / "part-").string())).append(index);
      if (!command.output_is_dir) line.append(".json");
    } else {
      line.append(ShellQuote(command.args[i]));
    }
  }
  line.append(fmt::format(" --shard \"${{{}}}/{}\"", index_variable, shards));
  return line;
}

std::string MergeCommand(const ShardableCommand& command, const std::filesystem::path& proctor,
                         const std::vector<std::filesystem::path>& parts) {
  std::string line =
      fmt::format("{} merge {}", ShellQuote(proctor.string()), ShellQuote(command.output));
  for (const auto& part : parts) line.append(" ").append(ShellQuote(part.string()));
  return line;
}

}  // namespace proctor
