// A Jinja template, parsed once and rendered many times, with the semantics of Python Jinja2
// 3.1 as Hugging Face transformers configures it for chat templates (sandboxed, immutable
// containers, trim_blocks, lstrip_blocks, loop controls). See docs/chat-templates.md for the
// supported subset.
//
//   auto t = jinja::Template::Parse(source, "chat_template");
//   std::string text = t.Render(context);  // context: a Dict of variables
//
// Templates cannot reach files, the environment or the network; loops, recursion and output
// size are bounded (RenderLimits). Every failure is a TemplateError naming the template line.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "text/jinja/errors.h"
#include "text/jinja/value.h"

namespace proctor::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // rendered text, and any captured block
  // Any one string, list or dict the template builds (text/jinja/budget.h).
  uint64_t max_value_bytes = uint64_t{64} << 20;
  // Every string, list and dict the template builds, summed over the render: a loop that
  // rebuilds a growing value is quadratic in these bytes (text/jinja/budget.h).
  uint64_t max_built_bytes = uint64_t{1} << 30;
  // Wall-clock time of one render: the bound on work that builds nothing (a loop that scans a
  // large string 10^5 times). Chat templates render in milliseconds.
  double max_render_seconds = 10.0;
  int64_t max_loop_iterations = 10'000'000;  // total over the render (range() sizes too)
  int max_call_depth = 200;                  // nested macro / recursive-loop calls
};

struct RenderOptions {
  RenderLimits limits;
  // The clock behind strftime_now(format): local time now, or this broken-down time (tests).
  std::optional<std::tm> fixed_now;
  // Extra global functions (transformers adds raise_exception and strftime_now; those two are
  // always present). A context variable of the same name wins, as in Jinja2.
  std::vector<std::pair<std::string, Value>> globals;
};

struct Stmt;

class Template {
 public:
  // Throws TemplateError(kSyntax) with the line of the problem.
  static Template Parse(std::string_view source, std::string name = "<template>");

  std::string Render(const Dict& context, const RenderOptions& options = {}) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace proctor::jinja
