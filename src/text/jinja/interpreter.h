// The tree-walking interpreter behind Template::Render: scopes as Jinja2 has them (a for-loop
// iteration and a macro call open a scope, if/elif do not), loop objects, macros and caller(),
// namespace attribute assignment, break/continue, and the render bounds.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "text/jinja/ast.h"
#include "text/jinja/budget.h"
#include "text/jinja/template.h"

namespace proctor::jinja {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  Interpreter(const std::string& template_name, const RenderOptions& options);
  ~Interpreter();  // breaks the reference cycles a render may build (macros, namespaces)
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders the whole template with `context` as the top-level variables.
  std::string Run(const Body& body, const Dict& context);

  Value Eval(const Expr& expr, const ScopePtr& scope);
  Value CallValue(const Value& callee, CallArgs& args);
  Value GetAttr(const Value& object, std::string_view name);
  Value GetItem(const Value& object, const Value& key);

  // Filter or test by name, for map(), select(), selectattr() and friends.
  Value ApplyFilter(std::string_view name, const Value& subject, CallArgs& args);
  bool ApplyTest(std::string_view name, const Value& subject, CallArgs& args);

  const RenderOptions& options() const { return options_; }
  // Counts loop iterations (or list elements being built) against the bound.
  void CountIterations(int64_t n);
  // Objects whose references are dropped when the render ends (namespaces).
  void TrackForCleanup(const ObjectPtr& object) { tracked_objects_.push_back(object); }

  // Renders a for statement over `iterable` (used by loop(...) of recursive loops).
  std::string RenderLoop(const Stmt& stmt, const ScopePtr& scope, const Value& iterable,
                         int depth0);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow Exec(const Body& body, const ScopePtr& scope, std::string* out);
  Flow ExecStmt(const Stmt& stmt, const ScopePtr& scope, std::string* out);
  void ExecFor(const Stmt& stmt, const ScopePtr& scope, const Value* iterable_override, int depth0,
               std::string* out);
  void Assign(const Target& target, const Value& value, const ScopePtr& scope);
  Value Lookup(const std::string& name, const ScopePtr& scope) const;
  Value EvalInner(const Expr& expr, const ScopePtr& scope);
  Value EvalCall(const Expr& expr, const ScopePtr& scope, const Value* caller);
  Value MakeMacro(const Stmt& stmt, const ScopePtr& scope);
  Value CallMacro(const Stmt& stmt, const ScopePtr& defining_scope, CallArgs& args);
  void Append(std::string* out, std::string_view text) const;

  struct DepthGuard;

  std::string name_;
  const RenderOptions& options_;
  std::unordered_map<std::string, Value> globals_;
  RenderBudget budget_;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::vector<std::weak_ptr<Object>> tracked_objects_;
  std::vector<std::weak_ptr<Scope>> macro_scopes_;  // scopes captured by macros
  const std::string* block_value_ = nullptr;        // kBlockValue while a filter block applies
};

}  // namespace proctor::jinja
