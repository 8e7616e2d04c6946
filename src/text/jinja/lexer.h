// Lexer for Jinja templates with Jinja2's whitespace rules (as transformers configures them:
// trim_blocks and lstrip_blocks on, keep_trailing_newline off).
//
// Output: a flat token stream. Template text becomes kData tokens (already stripped as `{%-`,
// `-%}`, trim_blocks and lstrip_blocks require); each tag becomes a begin token, the tokens of
// its expression, and an end token. Comments vanish; {% raw %} bodies become kData.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace proctor::jinja {

enum class TokenType {
  kData,        // template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // value already unescaped
  kInteger,
  kFloat,
  kOperator,  // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  kEof,
};

struct Token {
  TokenType type;
  std::string text;  // data, name, string value or operator
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError(kSyntax) with the line of the problem.
std::vector<Token> Tokenize(std::string_view source, const std::string& template_name,
                            const LexerOptions& options = {});

// A human name for a token in syntax errors ("end of statement block", "'foo'").
std::string DescribeToken(const Token& token);

}  // namespace proctor::jinja
