// tokenizer.json reader (see hf_json.h): a small recursive-descent JSON parser that fills
// model.vocab and model.merges straight into vectors and builds nlohmann::json only for the rest.
#include "text/tokenizer/hf_json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "util/utf8.h"

namespace proctor::text {

namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, TokenizerJson& out)
      : begin_(text.data()),
        p_(text.data()),
        end_(text.data() + text.size()),
        source_(source),
        out_(out) {}

  void ParseDocument() {
    Ws();
    out_.root = json::object();
    ParseObject([&](const std::string& key) {
      if (key == "model" && Peek() == '{') {
        out_.root["model"] = ParseModel();
      } else {
        out_.root[key] = ParseValue(1);
      }
    });
    Ws();
    if (p_ != end_) Bad("unexpected data after the top-level object");
  }

 private:
  // Parses '{' (string ':' value) , ... '}'; on_member(key) is called positioned at each value
  // and must consume it.
  template <typename OnMember>
  void ParseObject(OnMember on_member) {
    Expect('{');
    Ws();
    if (Peek() == '}') {
      ++p_;
      return;
    }
    std::string key;
    while (true) {
      Ws();
      ParseString(key);
      Ws();
      Expect(':');
      Ws();
      on_member(key);
      Ws();
      if (Peek() == ',') {
        ++p_;
        continue;
      }
      Expect('}');
      return;
    }
  }

  // Parses '[' value , ... ']'; on_element() is called positioned at each element and must
  // consume it.
  template <typename OnElement>
  void ParseArray(OnElement on_element) {
    Expect('[');
    Ws();
    if (Peek() == ']') {
      ++p_;
      return;
    }
    while (true) {
      Ws();
      on_element();
      Ws();
      if (Peek() == ',') {
        ++p_;
        continue;
      }
      Expect(']');
      return;
    }
  }
  [[noreturn]] void Bad(const char* what) {
    Fail("tokenizer", "{}: invalid JSON at byte {}: {}", source_, p_ - begin_, what);
  }
  char Peek() {
    if (p_ >= end_) Bad("unexpected end of file");
    return *p_;
  }
  void Expect(char c) {
    if (Peek() != c) {
      char msg[32];
      std::snprintf(msg, sizeof(msg), "expected '%c'", c);
      Bad(msg);
    }
    ++p_;
  }
  void Ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  unsigned Hex4() {
    if (end_ - p_ < 4) Bad("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        Bad("bad hex digit in \\u escape");
      }
    }
    return v;
  }

  void ParseString(std::string& out) {
    Expect('"');
    out.clear();
    while (true) {
      const char* start = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) {
        ++p_;
      }
      out.append(start, p_ - start);
      char c = Peek();
      if (c == '"') {
        ++p_;
        return;
      }
      if (c != '\\') Bad("control character in a string");
      ++p_;
      char e = Peek();
      ++p_;
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          unsigned cp = Hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') Bad("lone high surrogate");
            p_ += 2;
            unsigned lo = Hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) Bad("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            Bad("lone low surrogate");
          }
          AppendUtf8(static_cast<char32_t>(cp), &out);
          break;
        }
        default:
          Bad("unknown escape");
      }
    }
  }

  json ParseNumber() {
    const char* start = p_;
    if (Peek() == '-') ++p_;
    bool is_float = false;
    while (p_ < end_) {
      char c = *p_;
      if (c >= '0' && c <= '9') {
        ++p_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
        is_float = true;
        ++p_;
      } else {
        break;
      }
    }
    std::string text(start, p_ - start);
    if (text == "-" || text.empty()) Bad("bad number");
    char* used = nullptr;
    if (!is_float) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), &used, 10);
      if (*used == '\0' && errno == 0) return json(static_cast<int64_t>(v));
    }
    double d = std::strtod(text.c_str(), &used);
    if (*used != '\0') Bad("bad number");
    return json(d);
  }

  void Literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) Bad("bad literal");
    p_ += n;
  }

  json ParseValue(int depth) {
    if (depth > kMaxDepth) Bad("nesting too deep");
    char c = Peek();
    if (c == '{') {
      json obj = json::object();
      ParseObject([&](const std::string& key) { obj[key] = ParseValue(depth + 1); });
      return obj;
    }
    if (c == '[') {
      json arr = json::array();
      ParseArray([&] { arr.push_back(ParseValue(depth + 1)); });
      return arr;
    }
    if (c == '"') {
      std::string s;
      ParseString(s);
      return json(std::move(s));
    }
    if (c == 't') {
      Literal("true");
      return json(true);
    }
    if (c == 'f') {
      Literal("false");
      return json(false);
    }
    if (c == 'n') {
      Literal("null");
      return json(nullptr);
    }
    return ParseNumber();
  }

  json ParseModel() {
    json model = json::object();
    ParseObject([&](const std::string& key) {
      if (key == "vocab" && Peek() == '{') {
        ParseVocab();
      } else if (key == "merges" && Peek() == '[') {
        ParseMerges();
      } else {
        model[key] = ParseValue(2);
      }
    });
    return model;
  }

  void ParseVocab() {
    out_.has_vocab_object = true;
    ParseObject([&](const std::string& key) {
      bool negative = Peek() == '-';
      if (negative) ++p_;
      if (Peek() < '0' || Peek() > '9') Bad("model.vocab holds a value that is not an integer id");
      int64_t id = 0;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        id = id * 10 + (*p_++ - '0');
        if (id > (int64_t{1} << 40)) Bad("model.vocab id too large");
      }
      if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
        Bad("model.vocab holds a non-integer id");
      }
      out_.vocab.emplace_back(key, negative ? -id : id);
    });
  }

  void ParseMerges() {
    out_.has_merges = true;
    std::string s;
    ParseArray([&] {
      if (Peek() == '"') {
        ParseString(s);
        size_t space = s.find(' ');
        if (space == std::string::npos) {
          Fail("tokenizer", "{}: merge {} '{}' has no space between its two parts", source_,
               out_.merges.size(), s);
        }
        out_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (Peek() == '[') {
        ++p_;
        std::pair<std::string, std::string> pair;
        Ws();
        ParseString(pair.first);
        Ws();
        if (Peek() != ',') Bad("a merge pair does not have two parts");
        ++p_;
        Ws();
        ParseString(pair.second);
        Ws();
        if (Peek() != ']') Bad("a merge pair does not have two parts");
        ++p_;
        out_.merges.push_back(std::move(pair));
      } else {
        Bad("a merge is neither \"a b\" nor [\"a\", \"b\"]");
      }
    });
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const std::string& source_;
  TokenizerJson& out_;
};

}  // namespace

TokenizerJson ParseTokenizerJson(std::string_view text, const std::string& source) {
  if (!IsValidUtf8(text)) Fail("tokenizer", "{}: file is not valid UTF-8", source);
  TokenizerJson out;
  Parser(text, source, out).ParseDocument();
  return out;
}

}  // namespace proctor::text
