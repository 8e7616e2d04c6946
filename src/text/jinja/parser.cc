#include "text/jinja/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"

namespace proctor::jinja {
namespace {

ExprPtr MakeExpr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Nesting deeper than this is refused (Python Jinja2 would hit its recursion limit).
constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& name) : t_(tokens), name_(name) {}

  Body ParseTemplate() {
    std::string end_tag;
    Body body = ParseBody({}, &end_tag, "");
    return body;
  }

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
          Fail(fmt::format("Unexpected end of template. Jinja was looking for the following tags: "
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

  StmtPtr ParseStatement() {
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

  void ParseSignature(std::vector<MacroParam>* params) {
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

  Target ParseAssignTarget(std::initializer_list<std::string_view> extra_end) {
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

  // ---- expressions ----

  bool IsTupleEnd(std::initializer_list<std::string_view> extra_end) const {
    if (Cur().type == TokenType::kVarEnd || Cur().type == TokenType::kBlockEnd ||
        Cur().type == TokenType::kEof || IsOp(")")) {
      return true;
    }
    for (std::string_view e : extra_end) {
      if (IsName(e)) return true;
    }
    return false;
  }

  ExprPtr ParseTuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                     bool explicit_parentheses = false) {
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

  ExprPtr ParseExpression(bool with_condexpr) {
    return with_condexpr ? ParseCondExpr() : ParseOr();
  }

  ExprPtr ParseCondExpr() {
    ExprPtr expr1 = ParseOr();
    while (IsName("if")) {
      const int line = Cur().line;
      Next();
      ExprPtr cond = ParseOr();
      ExprPtr expr3;
      if (SkipName("else")) expr3 = ParseCondExpr();
      auto e = MakeExpr(ExprKind::kCondExpr, line);
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(expr1));
      e->args.push_back(std::move(expr3));
      expr1 = std::move(e);
    }
    return expr1;
  }

  ExprPtr Binary(ExprKind kind, ExprPtr left, ExprPtr right, int line, std::string op = "") {
    auto e = MakeExpr(kind, line);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr left = ParseAnd();
    while (IsName("or")) {
      const int line = Cur().line;
      Next();
      left = Binary(ExprKind::kOr, std::move(left), ParseAnd(), line);
    }
    return left;
  }

  ExprPtr ParseAnd() {
    ExprPtr left = ParseNot();
    while (IsName("and")) {
      const int line = Cur().line;
      Next();
      left = Binary(ExprKind::kAnd, std::move(left), ParseNot(), line);
    }
    return left;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      const int line = Cur().line;
      Next();
      auto e = MakeExpr(ExprKind::kNot, line);
      e->args.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
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

  ExprPtr ParseMath1() {
    ExprPtr left = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Cur().text;
      const int line = Cur().line;
      Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParseConcat(), line, op);
    }
    return left;
  }

  ExprPtr ParseConcat() {
    const int line = Cur().line;
    ExprPtr first = ParseMath2();
    if (!IsOp("~")) return first;
    auto e = MakeExpr(ExprKind::kConcat, line);
    e->args.push_back(std::move(first));
    while (SkipOp("~")) e->args.push_back(ParseMath2());
    return e;
  }

  ExprPtr ParseMath2() {
    ExprPtr left = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Cur().text;
      const int line = Cur().line;
      Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParsePow(), line, op);
    }
    return left;
  }

  ExprPtr ParsePow() {
    ExprPtr left = ParseUnary(true);
    while (IsOp("**")) {
      const int line = Cur().line;
      Next();
      left = Binary(ExprKind::kBinary, std::move(left), ParseUnary(true), line, "**");
    }
    return left;
  }

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

  ExprPtr ParseUnary(bool with_filter) {
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

  ExprPtr ParsePrimary() {
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

  ExprPtr ParsePostfix(ExprPtr node) {
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

  ExprPtr ParseFilterExpr(ExprPtr node) {
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

  ExprPtr ParseSubscript(ExprPtr node) {
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

  // An index or a slice start:stop:step (a kSlice without its subject yet).
  ExprPtr ParseSubscribed() {
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
    if (IsOp(":")) {
      parts.push_back(nullptr);
    } else if (!IsOp("]") && !IsOp(",")) {
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

  void ParseCallArgs(Expr* call) {
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

  ExprPtr ParseCall(ExprPtr node) {
    auto e = MakeExpr(ExprKind::kCall, Cur().line);
    e->args.push_back(std::move(node));
    ParseCallArgs(e.get());
    return e;
  }

  // `| name(args) | name2 ...`; with start_inline the first filter has no leading pipe.
  ExprPtr ParseFilterChain(ExprPtr node, bool start_inline) {
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

  ExprPtr ParseTest(ExprPtr node) {
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

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

}  // namespace

Body Parse(const std::vector<Token>& tokens, const std::string& template_name) {
  return Parser(tokens, template_name).ParseTemplate();
}

}  // namespace proctor::jinja
