// Jinja parser, expressions: tuples, conditional expressions, operators by precedence, primaries,
// subscripts and slices, calls, filters and tests (statements: parser.cc; the Parser class:
// parser_internal.h).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/parser_internal.h"

namespace proctor::jinja::internal {

bool Parser::IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
  if (Cur().type == TokenType::kVarEnd || Cur().type == TokenType::kBlockEnd ||
      Cur().type == TokenType::kEof || IsOp(")")) {
    return true;
  }
  for (std::string_view e : extra_end) {
    if (IsName(e)) return true;
  }
  return false;
}

ExprPtr Parser::ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                           bool explicit_parentheses) {
  const int line = Cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) ExpectOp(",");
    if (IsTupleEnd(extra_end)) break;
    args.push_back(ParseExpression(with_condexpr));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parentheses) {
      Fail(fmt::format("Expected an expression, got '{}'", DescribeToken(Cur())));
    }
  }
  auto e = MakeExpr(ExprKind::kTuple, line);
  e->args = std::move(args);
  return e;
}

ExprPtr Parser::ParseExpression(bool with_condexpr) {
  return with_condexpr ? ParseCondExpr() : ParseOr();
}

ExprPtr Parser::ParseCondExpr() {
  ExprPtr expr1 = ParseOr();
  while (IsName("if")) {
    const int line = Cur().line;
    Next();
    ExprPtr cond = ParseOr();
    ExprPtr expr3;
    if (SkipName("else")) {
      NestingGuard guard(this);  // `a if b else c if d else ...` recurses once per `else`
      expr3 = ParseCondExpr();
    }
    auto e = MakeExpr(ExprKind::kCondExpr, line);
    e->args.push_back(std::move(cond));
    e->args.push_back(std::move(expr1));
    e->args.push_back(std::move(expr3));
    expr1 = std::move(e);
  }
  return expr1;
}

ExprPtr Parser::Binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op) {
  auto e = MakeExpr(kind, line);
  e->name = std::move(op);
  e->args.push_back(std::move(left));
  e->args.push_back(std::move(right));
  return e;
}

ExprPtr Parser::ParseOr() {
  ExprPtr left = ParseAnd();
  while (IsName("or")) {
    const int line = Cur().line;
    Next();
    left = Binary(ExprKind::kOr, std::move(left), ParseAnd(), line);
  }
  return left;
}

ExprPtr Parser::ParseAnd() {
  ExprPtr left = ParseNot();
  while (IsName("and")) {
    const int line = Cur().line;
    Next();
    left = Binary(ExprKind::kAnd, std::move(left), ParseNot(), line);
  }
  return left;
}

ExprPtr Parser::ParseNot() {
  if (IsName("not")) {
    NestingGuard guard(this);  // `not not not ...` recurses once per `not`
    const int line = Cur().line;
    Next();
    auto e = MakeExpr(ExprKind::kNot, line);
    e->args.push_back(ParseNot());
    return e;
  }
  return ParseCompare();
}

ExprPtr Parser::ParseCompare() {
  const int line = Cur().line;
  ExprPtr first = ParseMath1();
  std::vector<ExprPtr> operands;
  std::vector<std::string> ops;
  while (true) {
    std::string op;
    if (Cur().type == TokenType::kOperator &&
        (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" || Cur().text == "<=" ||
         Cur().text == ">" || Cur().text == ">=")) {
      op = Cur().text;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && Peek().type == TokenType::kName && Peek().text == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    ops.push_back(op);
    operands.push_back(ParseMath1());
  }
  if (ops.empty()) return first;
  auto e = MakeExpr(ExprKind::kCompare, line);
  e->args.push_back(std::move(first));
  for (auto& o : operands) e->args.push_back(std::move(o));
  e->ops = std::move(ops);
  return e;
}

ExprPtr Parser::ParseMath1() {
  ExprPtr left = ParseConcat();
  while (IsOp("+") || IsOp("-")) {
    const std::string op = Cur().text;
    const int line = Cur().line;
    Next();
    left = Binary(ExprKind::kBinary, std::move(left), ParseConcat(), line, op);
  }
  return left;
}

ExprPtr Parser::ParseConcat() {
  const int line = Cur().line;
  ExprPtr first = ParseMath2();
  if (!IsOp("~")) return first;
  auto e = MakeExpr(ExprKind::kConcat, line);
  e->args.push_back(std::move(first));
  while (SkipOp("~")) e->args.push_back(ParseMath2());
  return e;
}

ExprPtr Parser::ParseMath2() {
  ExprPtr left = ParsePow();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const std::string op = Cur().text;
    const int line = Cur().line;
    Next();
    left = Binary(ExprKind::kBinary, std::move(left), ParsePow(), line, op);
  }
  return left;
}

ExprPtr Parser::ParsePow() {
  ExprPtr left = ParseUnary(true);
  while (IsOp("**")) {
    const int line = Cur().line;
    Next();
    left = Binary(ExprKind::kBinary, std::move(left), ParseUnary(true), line, "**");
  }
  return left;
}

ExprPtr Parser::ParseUnary(bool with_filter) {
  NestingGuard guard(this);
  const int line = Cur().line;
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    const bool minus = IsOp("-");
    Next();
    node = MakeExpr(minus ? ExprKind::kNeg : ExprKind::kPos, line);
    node->args.push_back(ParseUnary(false));
  } else {
    node = ParsePrimary();
  }
  node = ParsePostfix(std::move(node));
  if (with_filter) node = ParseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::ParsePrimary() {
  const Token& tok = Cur();
  const int line = tok.line;
  switch (tok.type) {
    case TokenType::kName: {
      auto e = MakeExpr(ExprKind::kLiteral, line);
      if (tok.text == "true" || tok.text == "True") {
        e->literal = Value(true);
      } else if (tok.text == "false" || tok.text == "False") {
        e->literal = Value(false);
      } else if (tok.text == "none" || tok.text == "None") {
        e->literal = Value(None{});
      } else {
        e->kind = ExprKind::kName;
        e->name = tok.text;
      }
      Next();
      return e;
    }
    case TokenType::kString: {
      std::string s;
      while (Cur().type == TokenType::kString) {
        s += Cur().text;
        Next();
      }
      auto e = MakeExpr(ExprKind::kLiteral, line);
      e->literal = Value(std::move(s));
      return e;
    }
    case TokenType::kInteger: {
      auto e = MakeExpr(ExprKind::kLiteral, line);
      e->literal = Value(tok.int_value);
      Next();
      return e;
    }
    case TokenType::kFloat: {
      auto e = MakeExpr(ExprKind::kLiteral, line);
      e->literal = Value(tok.float_value);
      Next();
      return e;
    }
    case TokenType::kOperator:
      if (tok.text == "(") {
        Next();
        ExprPtr e = ParseTuple(true, {}, true);
        ExpectOp(")");
        return e;
      }
      if (tok.text == "[") {
        Next();
        auto e = MakeExpr(ExprKind::kList, line);
        while (!IsOp("]")) {
          if (!e->args.empty()) ExpectOp(",");
          if (IsOp("]")) break;
          e->args.push_back(ParseExpression(true));
        }
        ExpectOp("]");
        return e;
      }
      if (tok.text == "{") {
        Next();
        auto e = MakeExpr(ExprKind::kDict, line);
        while (!IsOp("}")) {
          if (!e->args.empty()) ExpectOp(",");
          if (IsOp("}")) break;
          e->args.push_back(ParseExpression(true));
          ExpectOp(":");
          e->args.push_back(ParseExpression(true));
        }
        ExpectOp("}");
        return e;
      }
      break;
    default:
      break;
  }
  Fail(fmt::format("unexpected '{}'", DescribeToken(tok)));
}

ExprPtr Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    if (IsOp(".") || IsOp("[")) {
      node = ParseSubscript(std::move(node));
    } else if (IsOp("(")) {
      node = ParseCall(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      node = ParseFilterChain(std::move(node), false);
    } else if (IsName("is")) {
      node = ParseTest(std::move(node));
    } else if (IsOp("(")) {
      node = ParseCall(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::ParseSubscript(ExprPtr node) {
  const int line = Cur().line;
  if (SkipOp(".")) {
    if (Cur().type == TokenType::kName) {
      auto e = MakeExpr(ExprKind::kGetAttr, line);
      e->name = Cur().text;
      Next();
      e->args.push_back(std::move(node));
      return e;
    }
    if (Cur().type == TokenType::kInteger) {
      auto e = MakeExpr(ExprKind::kGetItem, line);
      auto index = MakeExpr(ExprKind::kLiteral, line);
      index->literal = Value(Cur().int_value);
      Next();
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(index));
      return e;
    }
    Fail("expected name or number");
  }
  ExpectOp("[");
  std::vector<ExprPtr> subs;
  while (!IsOp("]")) {
    if (!subs.empty()) ExpectOp(",");
    subs.push_back(ParseSubscribed());
  }
  ExpectOp("]");
  ExprPtr sub;
  if (subs.size() == 1) {
    sub = std::move(subs[0]);
  } else {
    for (const ExprPtr& s : subs) {
      // Python would build a tuple holding a slice object, which no template value can take as
      // an index; the evaluator has no slice values, so it is refused here.
      if (s->kind == ExprKind::kSlice) Fail("a slice cannot be one item of a tuple subscript");
    }
    sub = MakeExpr(ExprKind::kTuple, line);
    sub->args = std::move(subs);
  }
  if (sub->kind == ExprKind::kSlice) {
    sub->args.insert(sub->args.begin(), std::move(node));
    return sub;
  }
  auto e = MakeExpr(ExprKind::kGetItem, line);
  e->args.push_back(std::move(node));
  e->args.push_back(std::move(sub));
  return e;
}

ExprPtr Parser::ParseSubscribed() {
  const int line = Cur().line;
  std::vector<ExprPtr> parts;
  if (IsOp(":")) {
    Next();
    parts.push_back(nullptr);
  } else {
    ExprPtr node = ParseExpression(true);
    if (!IsOp(":")) return node;
    Next();
    parts.push_back(std::move(node));
  }
  if (!IsOp(":") && !IsOp("]") && !IsOp(",")) {
    parts.push_back(ParseExpression(true));
  } else {
    parts.push_back(nullptr);
  }
  if (SkipOp(":")) {
    if (!IsOp("]") && !IsOp(",")) {
      parts.push_back(ParseExpression(true));
    } else {
      parts.push_back(nullptr);
    }
  } else {
    parts.push_back(nullptr);
  }
  auto e = MakeExpr(ExprKind::kSlice, line);
  e->args = std::move(parts);
  return e;
}

void Parser::ParseCallArgs(Expr* call) {
  ExpectOp("(");
  bool first = true;
  while (!IsOp(")")) {
    if (!first) ExpectOp(",");
    first = false;
    if (IsOp(")")) break;
    if (IsOp("*") || IsOp("**")) Fail("*args and **kwargs in calls are not supported");
    if (Cur().type == TokenType::kName && Peek().type == TokenType::kOperator &&
        Peek().text == "=") {
      std::string key = Cur().text;
      Next();
      Next();
      call->kwargs.emplace_back(std::move(key), ParseExpression(true));
    } else {
      if (!call->kwargs.empty()) Fail("invalid syntax for function call expression");
      call->args.push_back(ParseExpression(true));
    }
  }
  ExpectOp(")");
}

ExprPtr Parser::ParseCall(ExprPtr node) {
  auto e = MakeExpr(ExprKind::kCall, Cur().line);
  e->args.push_back(std::move(node));
  ParseCallArgs(e.get());
  return e;
}

ExprPtr Parser::ParseFilterChain(ExprPtr node, bool start_inline) {
  while (IsOp("|") || start_inline) {
    if (!start_inline) Next();
    start_inline = false;
    const int line = Cur().line;
    std::string name = ExpectName();
    while (SkipOp(".")) {
      name += '.';
      name += ExpectName();
    }
    auto e = MakeExpr(ExprKind::kFilter, line);
    e->name = name;
    e->filter = FindFilter(name);
    if (e->filter == nullptr) Fail(line, fmt::format("No filter named '{}'.", name));
    e->args.push_back(std::move(node));
    if (IsOp("(")) ParseCallArgs(e.get());
    node = std::move(e);
  }
  return node;
}

ExprPtr Parser::ParseTest(ExprPtr node) {
  const int line = Cur().line;
  Next();  // is
  const bool negated = SkipName("not");
  std::string name = ExpectName();
  while (SkipOp(".")) {
    name += '.';
    name += ExpectName();
  }
  auto e = MakeExpr(ExprKind::kTest, line);
  e->name = name;
  e->negated = negated;
  e->test = FindTest(name);
  if (e->test == nullptr) Fail(line, fmt::format("No test named '{}'.", name));
  e->args.push_back(std::move(node));
  const TokenType ct = Cur().type;
  if (IsOp("(")) {
    ParseCallArgs(e.get());
  } else if ((ct == TokenType::kName || ct == TokenType::kString || ct == TokenType::kInteger ||
              ct == TokenType::kFloat || IsOp("(") || IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) Fail("You cannot chain multiple tests with is");
    e->args.push_back(ParsePostfix(ParsePrimary()));
  }
  return e;
}

}  // namespace proctor::jinja::internal
