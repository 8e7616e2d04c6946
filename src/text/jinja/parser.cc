// Jinja parser, statements: template bodies, block tags, macro signatures and assignment
// targets (expressions: parser_expressions.cc; the Parser class: parser_internal.h).
#include "text/jinja/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/parser_internal.h"

namespace proctor::jinja {
namespace internal {

Body Parser::ParseTemplate() {
  std::string end_tag;
  Body body = ParseBody({}, &end_tag, "");
  return body;
}

Body Parser::ParseBody(std::initializer_list<std::string_view> end_tags, std::string* found,
                       std::string_view innermost) {
  Body body;
  while (true) {
    const Token& tok = Cur();
    switch (tok.type) {
      case TokenType::kEof: {
        if (end_tags.size() == 0) return body;
        std::string wanted;
        for (std::string_view t : end_tags) {
          if (!wanted.empty()) wanted += " or ";
          wanted += fmt::format("'{}'", t);
        }
        Fail(
            fmt::format("Unexpected end of template. Jinja was looking for the following tags: "
                        "{}. The innermost block that needs to be closed is '{}'.",
                        wanted, innermost));
      }
      case TokenType::kData: {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = tok.line;
        s->text = tok.text;
        body.push_back(std::move(s));
        Next();
        break;
      }
      case TokenType::kVarBegin: {
        const int line = tok.line;
        Next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = line;
        s->expr = ParseTuple(true, {});
        if (Cur().type != TokenType::kVarEnd) {
          Fail(fmt::format("expected token 'end of print statement', got '{}'",
                           DescribeToken(Cur())));
        }
        Next();
        body.push_back(std::move(s));
        break;
      }
      case TokenType::kBlockBegin: {
        Next();
        if (Cur().type != TokenType::kName) {
          Fail("tag name expected");
        }
        const std::string tag = Cur().text;
        if (std::find(end_tags.begin(), end_tags.end(), tag) != end_tags.end()) {
          *found = tag;
          Next();
          return body;
        }
        body.push_back(ParseStatement());
        break;
      }
      default:
        Fail(fmt::format("unexpected '{}'", DescribeToken(tok)));
    }
  }
}

StmtPtr Parser::ParseStatement() {
  NestingGuard guard(this);
  const Token& tok = Cur();
  const std::string tag = tok.text;
  const int line = tok.line;
  auto s = std::make_unique<Stmt>();
  s->line = line;
  Next();
  if (tag == "if") {
    s->kind = StmtKind::kIf;
    ExprPtr cond = ParseTuple(true, {});
    while (true) {
      ExpectBlockEnd();
      std::string found;
      Body body = ParseBody({"elif", "else", "endif"}, &found, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (found == "elif") {
        cond = ParseTuple(true, {});
        continue;
      }
      if (found == "else") {
        ExpectBlockEnd();
        Body else_body = ParseBody({"endif"}, &found, "if");
        s->branches.emplace_back(nullptr, std::move(else_body));
      }
      ExpectBlockEnd();
      break;
    }
  } else if (tag == "for") {
    s->kind = StmtKind::kFor;
    s->target = ParseAssignTarget({"in"});
    if (!SkipName("in")) Fail(fmt::format("expected 'in', got '{}'", DescribeToken(Cur())));
    s->expr = ParseTuple(false, {"recursive"});
    if (SkipName("if")) s->condition = ParseExpression(true);
    if (SkipName("recursive")) s->recursive = true;
    ExpectBlockEnd();
    std::string found;
    s->body = ParseBody({"endfor", "else"}, &found, "for");
    if (found == "else") {
      ExpectBlockEnd();
      s->else_body = ParseBody({"endfor"}, &found, "for");
    }
    ExpectBlockEnd();
  } else if (tag == "set") {
    s->target = ParseAssignTarget({});
    if (SkipOp("=")) {
      s->kind = StmtKind::kSet;
      s->expr = ParseTuple(true, {});
      ExpectBlockEnd();
    } else {
      s->kind = StmtKind::kSetBlock;
      if (s->target.is_tuple || !s->target.attribute.empty()) {
        Fail(line, "a {% set %} block assigns a single name");
      }
      s->expr = MakeExpr(ExprKind::kBlockValue, line);
      if (IsOp("|")) s->expr = ParseFilterChain(std::move(s->expr), false);
      ExpectBlockEnd();
      std::string found;
      s->body = ParseBody({"endset"}, &found, "set");
      ExpectBlockEnd();
    }
  } else if (tag == "macro") {
    s->kind = StmtKind::kMacro;
    s->name = ExpectName();
    ParseSignature(&s->params);
    ExpectBlockEnd();
    std::string found;
    s->body = ParseBody({"endmacro"}, &found, "macro");
    if (Cur().type == TokenType::kName) Next();  // {% endmacro name %}
    ExpectBlockEnd();
  } else if (tag == "call") {
    s->kind = StmtKind::kCallBlock;
    if (IsOp("(")) ParseSignature(&s->params);
    s->expr = ParseExpression(true);
    if (s->expr->kind != ExprKind::kCall) Fail(line, "expected call");
    ExpectBlockEnd();
    std::string found;
    s->body = ParseBody({"endcall"}, &found, "call");
    ExpectBlockEnd();
  } else if (tag == "filter") {
    s->kind = StmtKind::kFilterBlock;
    s->expr = ParseFilterChain(MakeExpr(ExprKind::kBlockValue, line), true);
    ExpectBlockEnd();
    std::string found;
    s->body = ParseBody({"endfilter"}, &found, "filter");
    ExpectBlockEnd();
  } else if (tag == "break" || tag == "continue") {
    s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    ExpectBlockEnd();
  } else if (tag == "generation") {
    // transformers' {% generation %} marks assistant text; rendering keeps the body as is.
    ExpectBlockEnd();
    std::string found;
    s->kind = StmtKind::kIf;
    Body body = ParseBody({"endgeneration"}, &found, "generation");
    ExpectBlockEnd();
    auto always = MakeExpr(ExprKind::kLiteral, line);
    always->literal = Value(true);
    s->branches.emplace_back(std::move(always), std::move(body));
  } else {
    Fail(line, fmt::format("Encountered unknown tag '{}'.", tag));
  }
  return s;
}

void Parser::ParseSignature(std::vector<MacroParam>* params) {
  ExpectOp("(");
  while (!IsOp(")")) {
    if (!params->empty()) ExpectOp(",");
    if (IsOp(")")) break;
    MacroParam p;
    p.name = ExpectName();
    if (SkipOp("=")) p.default_value = ParseExpression(true);
    params->push_back(std::move(p));
  }
  ExpectOp(")");
}

Target Parser::ParseAssignTarget(std::initializer_list<std::string_view> extra_end) {
  Target target;
  const bool paren = SkipOp("(");
  while (true) {
    std::string n = ExpectName();
    if (target.names.empty() && IsOp(".") && !paren) {
      Next();
      target.names.push_back(std::move(n));
      target.attribute = ExpectName();
      return target;
    }
    target.names.push_back(std::move(n));
    if (!IsOp(",")) break;
    Next();
    target.is_tuple = true;
    if (paren && IsOp(")")) break;
    if (Cur().type != TokenType::kName) break;
    bool at_end = false;
    for (std::string_view e : extra_end) at_end |= IsName(e);
    if (at_end) break;
  }
  if (paren) {
    ExpectOp(")");
    target.is_tuple = true;
  }
  return target;
}

namespace {

// Operator chains (`1+1+...`, `a.x.x...`, `x|f|f...`) are parsed by loops, not recursion, so the
// parser's nesting guard does not see how deep their trees grow; evaluating such a tree recurses
// once per level. The whole tree is measured once after parsing (with an explicit stack) and a
// template deeper than kMaxExpressionDepth is refused before it can run.
constexpr int kMaxExpressionDepth = 500;

void CheckExpressionDepth(const Expr* root, const std::string& template_name) {
  if (root == nullptr) return;
  std::vector<std::pair<const Expr*, int>> pending = {{root, 1}};
  while (!pending.empty()) {
    const auto [e, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxExpressionDepth) {
      throw TemplateError(ErrorKind::kSyntax, template_name, e->line,
                          fmt::format("an expression nests deeper than {} levels (a chain of "
                                      "operators, attributes, filters or calls that long)",
                                      kMaxExpressionDepth));
    }
    for (const ExprPtr& a : e->args) {
      if (a) pending.emplace_back(a.get(), depth + 1);
    }
    for (const auto& [name, a] : e->kwargs) {
      if (a) pending.emplace_back(a.get(), depth + 1);
    }
  }
}

// Statements nest at most kMaxNesting deep (the parser's guard), so this recursion is bounded.
void CheckExpressionDepths(const Body& body, const std::string& template_name) {
  for (const StmtPtr& s : body) {
    CheckExpressionDepth(s->expr.get(), template_name);
    CheckExpressionDepth(s->condition.get(), template_name);
    for (const auto& [condition, branch] : s->branches) {
      CheckExpressionDepth(condition.get(), template_name);
      CheckExpressionDepths(branch, template_name);
    }
    for (const MacroParam& p : s->params)
      CheckExpressionDepth(p.default_value.get(), template_name);
    CheckExpressionDepths(s->body, template_name);
    CheckExpressionDepths(s->else_body, template_name);
  }
}

}  // namespace
}  // namespace internal

Expr::~Expr() {
  std::vector<ExprPtr> pending;
  const auto take_children = [&pending](Expr* e) {
    for (ExprPtr& a : e->args) {
      if (a) pending.push_back(std::move(a));
    }
    for (auto& [name, a] : e->kwargs) {
      if (a) pending.push_back(std::move(a));
    }
  };
  take_children(this);
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    take_children(e.get());
  }  // e is destroyed here, childless
}

Body Parse(const std::vector<Token>& tokens, const std::string& template_name) {
  Body body = internal::Parser(tokens, template_name).ParseTemplate();
  internal::CheckExpressionDepths(body, template_name);
  return body;
}

}  // namespace proctor::jinja
