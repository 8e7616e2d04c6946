// The Jinja parser's recursive-descent class (token helpers inline), shared by its two halves:
// parser.cc (statements: template bodies, tags, macro signatures, assignment targets) and
// parser_expressions.cc (expressions by precedence, filters, tests, calls, subscripts).
// Internal to the jinja library; the entry point is Parse() in parser.h.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/errors.h"
#include "text/jinja/lexer.h"

namespace proctor::jinja::internal {

inline ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Nesting deeper than this is refused (Python Jinja2 would hit its recursion limit).
inline constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name) : t_(tokens), name_(name) {}

  Body ParseTemplate();

 private:
  // ---- token helpers ----
  const Token& Cur() const { return t_[pos_]; }
  const Token& Peek(size_t n = 1) const { return t_[std::min(pos_ + n, t_.size() - 1)]; }
  void Next() {
    if (pos_ + 1 < t_.size()) ++pos_;
  }
  bool IsOp(std::string_view op) const {
    return Cur().type == TokenType::kOperator && Cur().text == op;
  }
  bool IsName(std::string_view name) const {
    return Cur().type == TokenType::kName && Cur().text == name;
  }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  [[noreturn]] void Fail(const std::string& message) const { Fail(Cur().line, message); }
  [[noreturn]] void Fail(int line, const std::string& message) const {
    throw TemplateError(ErrorKind::kSyntax, name_, line, message);
  }
  void ExpectOp(std::string_view op) {
    if (!SkipOp(op)) {
      Fail(fmt::format("expected token '{}', got '{}'", op, DescribeToken(Cur())));
    }
  }
  std::string ExpectName() {
    if (Cur().type != TokenType::kName) {
      Fail(fmt::format("expected token 'name', got '{}'", DescribeToken(Cur())));
    }
    std::string n = Cur().text;
    Next();
    return n;
  }
  void ExpectBlockEnd() {
    if (Cur().type != TokenType::kBlockEnd) {
      Fail(fmt::format("expected token 'end of statement block', got '{}'", DescribeToken(Cur())));
    }
    Next();
  }

  // ---- statements ----

  // Parses until a block tag named in `end_tags` (consumed up to its name; the caller parses
  // the rest of that tag). *found gets the tag name.
  Body ParseBody(std::initializer_list<std::string_view> end_tags, std::string* found,
                 std::string_view innermost);
  StmtPtr ParseStatement();
  void ParseSignature(std::vector<MacroParam>* params);
  Target ParseAssignTarget(std::initializer_list<std::string_view> extra_end);

  // ---- expressions ----

  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const;
  ExprPtr ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                     bool explicit_parentheses = false);
  ExprPtr ParseExpression(bool with_condexpr);
  ExprPtr ParseCondExpr();
  ExprPtr Binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = "");
  ExprPtr ParseOr();
  ExprPtr ParseAnd();
  ExprPtr ParseNot();
  ExprPtr ParseCompare();
  ExprPtr ParseMath1();
  ExprPtr ParseConcat();
  ExprPtr ParseMath2();
  ExprPtr ParsePow();
  // Counts nested expressions and blocks so a hostile template cannot exhaust the stack.
  struct NestingGuard {
    explicit NestingGuard(Parser* p) : parser(p) {
      if (++parser->nesting_ > kMaxNesting) {
        parser->Fail(fmt::format("template nesting is deeper than {} levels", kMaxNesting));
      }
    }
    ~NestingGuard() { --parser->nesting_; }
    Parser* parser;
  };
  ExprPtr ParseUnary(bool with_filter);
  ExprPtr ParsePrimary();
  ExprPtr ParsePostfix(ExprPtr node);
  ExprPtr ParseFilterExpr(ExprPtr node);
  ExprPtr ParseSubscript(ExprPtr node);
  // An index or a slice start:stop:step (a kSlice without its subject yet).
  ExprPtr ParseSubscribed();
  void ParseCallArgs(Expr* call);
  ExprPtr ParseCall(ExprPtr node);

  // `| name(args) | name2 ...`; with start_inline the first filter has no leading pipe.
  ExprPtr ParseFilterChain(ExprPtr node, bool start_inline);
  ExprPtr ParseTest(ExprPtr node);
  const std::vector<Token>& t_;
  const std::string& name_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

}  // namespace proctor::jinja::internal
