// The parsed form of a Jinja template: expression and statement trees, built once by the
// parser and walked by the interpreter for every render.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace proctor::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct FilterDef;
struct TestDef;

enum class ExprKind {
  kLiteral,     // literal
  kName,        // name
  kList,        // args
  kTuple,       // args
  kDict,        // args = key, value, key, value, ...
  kGetAttr,     // args[0].name
  kGetItem,     // args[0][args[1]]
  kSlice,       // args[0][args[1]:args[2]:args[3]] (null parts omitted)
  kCall,        // args[0](args[1..], kwargs)
  kFilter,      // args[0] | name(args[1..], kwargs)
  kTest,        // args[0] is [not] name(args[1..], kwargs)
  kNeg,         // -args[0]
  kPos,         // +args[0]
  kNot,         // not args[0]
  kBinary,      // args[0] <name> args[1] for + - * / // % **
  kConcat,      // args[0] ~ args[1] ~ ...
  kAnd,         // args[0] and args[1]
  kOr,          // args[0] or args[1]
  kCompare,     // args[0] ops[0] args[1] ops[1] args[2] ... (Python chained comparison)
  kCondExpr,    // args[1] if args[0] else args[2] (args[2] may be null)
  kBlockValue,  // the rendered body of a {% filter %} or {% set %} block
};

struct Expr {
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Releases the subtree from an explicit stack, not by recursion: a chain of 10^5 `+` or `.x`
  // is a tree that deep, and unique_ptr's own destructor would recurse once per level.
  ~Expr();

  ExprKind kind;
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;       // kCompare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  bool negated = false;               // kTest: `is not`
  const FilterDef* filter = nullptr;  // kFilter, resolved at parse time
  const TestDef* test = nullptr;      // kTest, resolved at parse time
};

enum class StmtKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // branches: (condition, body), the else branch has a null condition
  kFor,          // for target in expr [if condition] [recursive]: body [else: else_body]
  kSet,          // set target = expr
  kSetBlock,     // set target [| filters] ... endset: expr holds the filters over kBlockValue
  kMacro,        // macro name(params): body
  kCallBlock,    // call(params) expr: body (body is `caller`)
  kFilterBlock,  // filter ...: body; expr holds the filters over kBlockValue
  kBreak,
  kContinue,
};

// An assignment target: a name, a tuple of names (unpacking), or namespace.attr.
struct Target {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string attribute;  // non-empty: names[0].attribute
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;  // kFor: the loop filter
  std::vector<std::pair<ExprPtr, Body>> branches;
  Target target;
  bool recursive = false;
  Body body;
  Body else_body;
  std::string name;                // kMacro
  std::vector<MacroParam> params;  // kMacro, kCallBlock
};

}  // namespace proctor::jinja
