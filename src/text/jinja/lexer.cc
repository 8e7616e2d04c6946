#include "text/jinja/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "text/jinja/errors.h"
#include "text/jinja/py_str.h"
#include "text/jinja/value.h"
#include "util/utf8.h"

namespace proctor::jinja {
namespace {

// Jinja2 normalizes every newline sequence to "\n" and drops one trailing newline.
std::string NormalizeNewlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the Python-whitespace run (\s*) starting at pos.
size_t WhitespaceRun(std::string_view s, size_t pos) {
  size_t i = pos;
  while (i < s.size()) {
    size_t next = i;
    if (!IsPySpace(DecodeUtf8(s, &next, InvalidByte::kAsLatin1))) break;
    i = next;
  }
  return i - pos;
}

bool AllWhitespace(std::string_view s) { return WhitespaceRun(s, 0) == s.size(); }

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name, const LexerOptions& options)
      : src_(NormalizeNewlines(source, options.keep_trailing_newline)),
        name_(name),
        options_(options) {}

  std::vector<Token> Run() {
    while (pos_ < src_.size()) {
      const size_t tag = FindTagStart(pos_);
      if (tag == std::string_view::npos) {
        EmitData(src_.substr(pos_), pos_);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::string text = src_.substr(pos_, tag - pos_);
      ApplyLeftStrip(&text, sign, kind != '{');
      EmitData(text, pos_);
      AdvanceTo(tag);
      if (kind == '#') {
        LexComment();
      } else if (kind == '%' && TryLexRaw()) {
        // raw block consumed
      } else {
        LexTag(kind);
      }
    }
    tokens_.push_back(Token{TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& message) const {
    throw TemplateError(ErrorKind::kSyntax, name_, line, message);
  }

  size_t FindTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  // `{%-` strips all whitespace before the tag; lstrip_blocks strips spaces and tabs between
  // the start of the line and a block or comment tag.
  void ApplyLeftStrip(std::string* text, char sign, bool is_block_or_comment) const {
    if (sign == '-') {
      *text = PyStrip(*text, nullptr, false, true);
    } else if (sign != '+' && options_.lstrip_blocks && is_block_or_comment) {
      const size_t nl = text->rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text->size() &&
          AllWhitespace(std::string_view(*text).substr(l_pos))) {
        text->resize(l_pos);
      }
    }
  }

  void EmitData(std::string_view text, size_t at) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::kData, std::string(text), line_});
    (void)at;
  }

  void AdvanceTo(size_t pos) {
    line_ += static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         src_.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
    pos_ = pos;
  }

  // After a tag end: `-` strips all following whitespace, trim_blocks one newline.
  void AfterTagEnd(size_t end_pos, char sign, bool trim_newline) {
    size_t pos = end_pos;
    if (sign == '-') {
      pos += WhitespaceRun(src_, pos);
    } else if (sign != '+' && trim_newline && options_.trim_blocks && pos < src_.size() &&
               src_[pos] == '\n') {
      ++pos;
    }
    line_starting_ = pos > 0 && src_[pos - 1] == '\n';
    AdvanceTo(pos);
  }

  void LexComment() {
    const int start_line = line_;
    const size_t close = src_.find("#}", pos_ + 2);
    if (close == std::string::npos) Fail(start_line, "Missing end of comment tag");
    char sign = '\0';
    if (close > pos_ + 2 && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
      sign = src_[close - 1];
    }
    AfterTagEnd(close + 2, sign, /*trim_newline=*/true);
  }

  // {% raw %}...{% endraw %}: the body is data, untouched.
  bool TryLexRaw() {
    size_t p = pos_ + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p += WhitespaceRun(src_, p);
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) {
      return false;
    }
    p += 3;
    p += WhitespaceRun(src_, p);
    const int start_line = line_;
    char open_end_sign = '\0';
    if (src_.compare(p, 3, "-%}") == 0) {
      open_end_sign = '-';
      p += 3;
    } else if (src_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      return false;
    }
    if (open_end_sign == '-') p += WhitespaceRun(src_, p);
    // Find {% endraw %}.
    size_t search = p;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) {
        Fail(start_line, "Missing end of raw directive");
      }
      size_t q = open + 2;
      char sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q += WhitespaceRun(src_, q);
      if (src_.compare(q, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      q += 6;
      q += WhitespaceRun(src_, q);
      char end_sign = '\0';
      if (src_.compare(q, 3, "-%}") == 0 || src_.compare(q, 3, "+%}") == 0) {
        end_sign = src_[q];
        q += 3;
      } else if (src_.compare(q, 2, "%}") == 0) {
        q += 2;
      } else {
        search = open + 2;
        continue;
      }
      std::string body = src_.substr(p, open - p);
      const bool saved = line_starting_;
      line_starting_ = false;
      ApplyLeftStrip(&body, sign, true);
      line_starting_ = saved;
      EmitData(body, p);
      AfterTagEnd(q, end_sign, /*trim_newline=*/true);
      return true;
    }
  }

  void LexTag(char kind) {
    const bool is_block = kind == '%';
    const int start_line = line_;
    tokens_.push_back(Token{is_block ? TokenType::kBlockBegin : TokenType::kVarBegin, "", line_});
    size_t p = pos_ + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    int line = line_;
    std::vector<char> balance;
    while (true) {
      // Whitespace.
      const size_t ws = WhitespaceRun(src_, p);
      line +=
          static_cast<int>(std::count(src_.begin() + static_cast<std::ptrdiff_t>(p),
                                      src_.begin() + static_cast<std::ptrdiff_t>(p + ws), '\n'));
      p += ws;
      if (p >= src_.size()) {
        Fail(start_line, is_block
                             ? "Unexpected end of template, expected 'end of statement block'."
                             : "unexpected end of template, expected 'end of print statement'.");
      }
      if (balance.empty()) {
        const std::string_view close = is_block ? "%}" : "}}";
        char sign = '\0';
        size_t end = std::string::npos;
        if (src_.compare(p, 1, "-") == 0 && src_.compare(p + 1, 2, close) == 0) {
          sign = '-';
          end = p + 3;
        } else if (is_block && src_.compare(p, 1, "+") == 0 && src_.compare(p + 1, 2, close) == 0) {
          sign = '+';
          end = p + 3;
        } else if (src_.compare(p, 2, close) == 0) {
          end = p + 2;
        }
        if (end != std::string::npos) {
          tokens_.push_back(Token{is_block ? TokenType::kBlockEnd : TokenType::kVarEnd, "", line});
          AfterTagEnd(end, sign, /*trim_newline=*/is_block);
          return;
        }
      }
      p = LexOne(p, &line, &balance);
    }
  }

  // Lexes one expression token at p; returns the position after it.
  size_t LexOne(size_t p, int* line, std::vector<char>* balance) {
    const char c = src_[p];
    if (IsNameStart(c)) {
      size_t e = p + 1;
      while (e < src_.size() && IsNameChar(src_[e])) ++e;
      tokens_.push_back(Token{TokenType::kName, src_.substr(p, e - p), *line});
      return e;
    }
    if (IsDigit(c)) return LexNumber(p, *line);
    if (c == '\'' || c == '"') return LexString(p, line);
    static constexpr std::string_view kTwoCharOps[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwoCharOps) {
      if (src_.compare(p, 2, op) == 0) {
        tokens_.push_back(Token{TokenType::kOperator, std::string(op), *line});
        return p + 2;
      }
    }
    static constexpr std::string_view kOneCharOps = "+-/*%~[](){}<>=.:|,;";
    if (kOneCharOps.find(c) != std::string_view::npos) {
      if (c == '(' || c == '[' || c == '{') {
        balance->push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (c == ')' || c == ']' || c == '}') {
        if (balance->empty()) Fail(*line, fmt::format("unexpected '{}'", c));
        if (balance->back() != c) {
          Fail(*line, fmt::format("unexpected '{}', expected '{}'", c, balance->back()));
        }
        balance->pop_back();
      }
      tokens_.push_back(Token{TokenType::kOperator, std::string(1, c), *line});
      return p + 1;
    }
    Fail(*line, fmt::format("unexpected char {} at {}", StringRepr(std::string(1, c)), p));
  }

  size_t LexNumber(size_t p, int line) {
    size_t e = p;
    std::string digits;
    auto take_digits = [&] {
      while (e < src_.size() && (IsDigit(src_[e]) ||
                                 (src_[e] == '_' && e + 1 < src_.size() && IsDigit(src_[e + 1])))) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    take_digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && IsDigit(src_[e + 1])) {
      is_float = true;
      digits += '.';
      ++e;
      take_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        is_float = true;
        digits += 'e';
        digits.append(src_, e + 1, q - e - 1);
        e = q;
        take_digits();
      }
    }
    Token t{is_float ? TokenType::kFloat : TokenType::kInteger, src_.substr(p, e - p), line};
    if (is_float) {
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value);
      if (res.ec != std::errc()) Fail(line, fmt::format("integer {} is too large", digits));
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  // Python string literal with unicode-escape decoding (as Jinja2's lexer does).
  size_t LexString(size_t p, int* line) {
    const char quote = src_[p];
    const int start_line = *line;
    std::string value;
    size_t i = p + 1;
    while (true) {
      if (i >= src_.size()) Fail(start_line, fmt::format("unexpected char '{}'", quote));
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++*line;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) Fail(start_line, "unterminated string");
      const char e = src_[i + 1];
      i += 2;
      auto hex = [&](int n) -> char32_t {
        if (i + static_cast<size_t>(n) > src_.size()) Fail(*line, "truncated \\x escape");
        char32_t v = 0;
        for (int k = 0; k < n; ++k) {
          const char h = src_[i + static_cast<size_t>(k)];
          int d = (h >= '0' && h <= '9')   ? h - '0'
                  : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                  : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                           : -1;
          if (d < 0) Fail(*line, "truncated \\xXX escape");
          v = v * 16 + static_cast<char32_t>(d);
        }
        i += static_cast<size_t>(n);
        return v;
      };
      switch (e) {
        case '\n':
          ++*line;
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'v':
          value += '\v';
          break;
        case 'x':
          AppendUtf8(hex(2), &value);
          break;
        case 'u':
          AppendUtf8(hex(4), &value);
          break;
        case 'U':
          AppendUtf8(hex(8), &value);
          break;
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) {
              v = v * 8 + static_cast<char32_t>(src_[i++] - '0');
            }
            AppendUtf8(v, &value);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    tokens_.push_back(Token{TokenType::kString, std::move(value), start_line});
    return i + 1;
  }

  std::string src_;
  const std::string& name_;
  LexerOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source, const std::string& template_name,
                            const LexerOptions& options) {
  return Lexer(source, template_name, options).Run();
}

std::string DescribeToken(const Token& token) {
  switch (token.type) {
    case TokenType::kData:
      return "template data";
    case TokenType::kVarBegin:
      return "begin of print statement";
    case TokenType::kVarEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kEof:
      return "end of template";
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    default:
      return token.text;
  }
}

}  // namespace proctor::jinja
