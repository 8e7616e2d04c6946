// Methods of Python's str, dict and list that chat templates call, with Python's semantics
// (positions count code points; the immutable sandbox refuses mutating methods).
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "text/jinja/budget.h"
#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/py_str.h"
#include "util/utf8.h"

namespace proctor::jinja {
namespace {

constexpr std::array<std::string_view, 8> kUnsafeListMethods = {
    "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
constexpr std::array<std::string_view, 5> kUnsafeDictMethods = {"clear", "pop", "popitem",
                                                                "setdefault", "update"};
constexpr std::array<std::string_view, 28> kStrMethods = {
    "strip",    "lstrip",  "rstrip",  "split",   "rsplit",     "splitlines", "startswith",
    "endswith", "upper",   "lower",   "title",   "capitalize", "replace",    "find",
    "rfind",    "index",   "rindex",  "count",   "join",       "isdigit",    "isalpha",
    "isalnum",  "isspace", "isupper", "islower", "format",     "casefold",   "swapcase"};
constexpr std::array<std::string_view, 5> kDictMethods = {"items", "keys", "values", "get", "copy"};
constexpr std::array<std::string_view, 3> kListMethods = {"index", "count", "copy"};

template <size_t N>
bool In(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::string& StrArg(const Value* v, std::string_view method, std::string_view what) {
  if (v == nullptr || !v->is_string()) {
    if (v != nullptr && v->is_undefined()) FailUndefined(*v);
    ThrowEval(ErrorKind::kType, fmt::format("{}() {} must be str, not {}", method, what,
                                            v ? v->TypeName() : "nothing"));
  }
  return v->str();
}

// Python str.split / str.rsplit.
std::vector<Value> Split(const std::string& s, const Value* sep_v, int64_t maxsplit,
                         bool from_right) {
  // The parts are counted as they are found: 30 million words would be gigabytes of parts
  // before the list of them could be checked.
  const auto check_parts = [](size_t n) {
    if (n % 4096 == 0) CheckValueSize(n * sizeof(Value), "split's list");
  };
  std::vector<std::string> parts;
  if (sep_v == nullptr || sep_v->is_none()) {
    // Runs of whitespace separate; leading and trailing whitespace is dropped.
    std::vector<std::pair<size_t, size_t>> words;  // byte ranges
    size_t i = 0;
    size_t word_start = std::string::npos;
    while (i < s.size()) {
      const size_t start = i;
      const bool space = IsPySpace(DecodeUtf8(s, &i, InvalidByte::kAsLatin1));
      if (!space && word_start == std::string::npos) word_start = start;
      if (space && word_start != std::string::npos) {
        check_parts(words.size());
        words.emplace_back(word_start, start);
        word_start = std::string::npos;
      }
    }
    if (word_start != std::string::npos) words.emplace_back(word_start, s.size());
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto [a, b] : words) parts.push_back(s.substr(a, b - a));
    } else if (!from_right) {
      for (size_t k = 0; k < static_cast<size_t>(maxsplit); ++k) {
        parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
      }
      parts.push_back(
          PyStrip(s.substr(words[static_cast<size_t>(maxsplit)].first), nullptr, false, true));
    } else {
      const size_t keep = words.size() - static_cast<size_t>(maxsplit);
      parts.push_back(PyStrip(s.substr(0, words[keep - 1].second), nullptr, true, false));
      for (size_t k = keep; k < words.size(); ++k) {
        parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
      }
    }
  } else {
    const std::string& sep = StrArg(sep_v, "split", "separator");
    if (sep.empty()) ThrowEval(ErrorKind::kType, "empty separator");
    if (!from_right) {
      size_t start = 0;
      int64_t splits = 0;
      while (maxsplit < 0 || splits < maxsplit) {
        const size_t at = s.find(sep, start);
        if (at == std::string::npos) break;
        check_parts(parts.size());
        parts.push_back(s.substr(start, at - start));
        start = at + sep.size();
        ++splits;
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      int64_t splits = 0;
      std::vector<std::string> rev;
      while (maxsplit < 0 || splits < maxsplit) {
        if (end < sep.size()) break;
        const size_t at = s.rfind(sep, end - sep.size());
        if (at == std::string::npos) break;
        check_parts(rev.size());
        rev.push_back(s.substr(at + sep.size(), end - at - sep.size()));
        end = at;
        ++splits;
      }
      rev.push_back(s.substr(0, end));
      parts.assign(rev.rbegin(), rev.rend());
    }
  }
  CheckValueSize(parts.size() * sizeof(Value), "split's list");
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return out;
}

std::string Replace(const std::string& s, const std::string& old, const std::string& with,
                    int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts `with` before every code point and at the end.
    size_t i = 0;
    while (i < s.size() && (count < 0 || done < count)) {
      CheckValueSize(out.size() + with.size() + (s.size() - i), "replace's result");
      out += with;
      ++done;
      const size_t start = i;
      DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
      out.append(s, start, i - start);
    }
    out.append(s, i, std::string::npos);
    if (i >= s.size() && (count < 0 || done < count)) out += with;
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    CheckValueSize(out.size() + (at - start) + with.size() + (s.size() - at), "replace's result");
    out.append(s, start, at - start);
    out += with;
    start = at + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

int64_t CodePointIndex(const std::string& s, size_t byte_offset) {
  return static_cast<int64_t>(CodePointCount(std::string_view(s).substr(0, byte_offset)));
}

bool AllChars(const std::string& s, bool (*pred)(char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), pred);
}

std::string Title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const bool lower = c >= 'a' && c <= 'z';
    const bool upper = c >= 'A' && c <= 'Z';
    if (lower && !prev_cased) c = static_cast<char>(c - 'a' + 'A');
    if (upper && prev_cased) c = static_cast<char>(c - 'A' + 'a');
    prev_cased = lower || upper;
  }
  return out;
}

// str.format with positional {} / {0} and keyword {name} fields (no format specs).
std::string Format(const std::string& f, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos)
        ThrowEval(ErrorKind::kType, "Single '{' encountered in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos) {
        ThrowEval(ErrorKind::kType, "format specs in str.format are not supported");
      }
      const Value* v = nullptr;
      if (field.empty() ||
          std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        const size_t index = field.empty() ? auto_index++ : std::stoul(field);
        if (index >= args.positional.size()) {
          ThrowEval(
              ErrorKind::kType,
              fmt::format("Replacement index {} out of range for positional args tuple", index));
        }
        v = &args.positional[index];
      } else {
        for (auto& [k, val] : args.keyword) {
          if (k == field) v = &val;
        }
        if (v == nullptr) ThrowEval(ErrorKind::kType, fmt::format("'{}'", field));
      }
      const std::string text = v->Str();
      CheckValueSize(out.size() + text.size(), "format's result");
      out += text;
      i = close;
    } else if (c == '}') {
      ThrowEval(ErrorKind::kType, "Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

bool HasPrefixOrSuffix(const std::string& s, const Value* arg, bool prefix,
                       std::string_view method) {
  std::vector<Value> options;
  if (arg != nullptr && arg->is_list() && arg->list().is_tuple) {
    options = arg->list().items;
  } else {
    options.push_back(arg ? *arg : Value());
  }
  for (const Value& o : options) {
    const std::string& p = StrArg(&o, method, "argument");
    if (p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) == 0
                                        : s.compare(s.size() - p.size(), p.size(), p) == 0)) {
      return true;
    }
  }
  return false;
}

Value CallStrMethod(const std::string& s, std::string_view name, CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(name, args, {"chars"});
    const Value* chars = b.Get(0);
    const std::string* set =
        (chars && !chars->is_none()) ? &StrArg(chars, name, "argument") : nullptr;
    return Value(PyStrip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder b(name, args, {"sep", "maxsplit"});
    return Value::MakeList(Split(s, b.Get(0), b.IntOr(1, -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    ArgBinder b(name, args, {"keepends"});
    const bool keep = b.GetOr(0, Value(false)).Truthy();
    std::vector<Value> lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        size_t end = i;
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        lines.emplace_back(s.substr(start, (keep ? i + 1 : end) - start));
        start = i + 1;
      }
    }
    if (start < s.size()) lines.emplace_back(s.substr(start));
    return Value::MakeList(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    ArgBinder b(name, args, {"prefix"});
    return Value(HasPrefixOrSuffix(s, b.Get(0), name == "startswith", name));
  }
  if (name == "upper" || name == "lower" || name == "casefold" || name == "title" ||
      name == "capitalize" || name == "swapcase") {
    ArgBinder b(name, args, {});
    if (name == "upper") return Value(AsciiUpper(s));
    if (name == "lower" || name == "casefold") return Value(AsciiLower(s));
    if (name == "title") return Value(Title(s));
    if (name == "swapcase") {
      std::string out = s;
      for (char& c : out) {
        if (c >= 'a' && c <= 'z')
          c = static_cast<char>(c - 'a' + 'A');
        else if (c >= 'A' && c <= 'Z')
          c = static_cast<char>(c - 'A' + 'a');
      }
      return Value(out);
    }
    std::string out = AsciiLower(s);
    if (!out.empty()) out[0] = AsciiUpper(out.substr(0, 1))[0];
    return Value(out);
  }
  if (name == "replace") {
    ArgBinder b(name, args, {"old", "new", "count"});
    return Value(
        Replace(s, StrArg(b.Get(0), name, "old"), StrArg(b.Get(1), name, "new"), b.IntOr(2, -1)));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder b(name, args, {"sub"});
    const std::string& sub = StrArg(b.Get(0), name, "argument");
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(CodePointCount(s) + 1));
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    }
    const size_t at = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) {
      if (name == "index" || name == "rindex") ThrowEval(ErrorKind::kType, "substring not found");
      return Value(int64_t{-1});
    }
    return Value(CodePointIndex(s, at));
  }
  if (name == "join") {
    ArgBinder b(name, args, {"iterable"});
    const std::vector<Value> items = Iterate(b.GetOr(0, Value()));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        ThrowEval(ErrorKind::kType, fmt::format("sequence item {}: expected str instance, {} found",
                                                i, items[i].TypeName()));
      }
      CheckValueSize(out.size() + s.size() + items[i].str().size(), "join's result");
      if (i) out += s;
      out += items[i].str();
    }
    return Value(std::move(out));
  }
  if (name == "isdigit") return Value(AllChars(s, [](char c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha") {
    return Value(
        AllChars(s, [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }));
  }
  if (name == "isalnum") {
    return Value(AllChars(s, [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }));
  }
  if (name == "isspace") return Value(!s.empty() && PyStrip(s, nullptr, true, true).empty());
  if (name == "isupper" || name == "islower") {
    const bool want_upper = name == "isupper";
    bool cased = false;
    for (char c : s) {
      if (c >= 'a' && c <= 'z') {
        if (want_upper) return Value(false);
        cased = true;
      } else if (c >= 'A' && c <= 'Z') {
        if (!want_upper) return Value(false);
        cased = true;
      }
    }
    return Value(cased);
  }
  if (name == "format") return Value(Format(s, args));
  ThrowEval(ErrorKind::kType, fmt::format("str has no method {}", name));
}

Value CallDictMethod(const Value& self, std::string_view name, CallArgs& args) {
  const Dict& d = self.dict();
  if (name == "items" || name == "keys" || name == "values") {
    ArgBinder b(name, args, {});
    std::vector<Value> out;
    out.reserve(d.size());
    for (const auto& [k, v] : d.entries()) {
      if (name == "items")
        out.push_back(Value::MakeList({Value(k), v}, true));
      else if (name == "keys")
        out.emplace_back(k);
      else
        out.push_back(v);
    }
    return Value::MakeList(std::move(out));
  }
  if (name == "get") {
    ArgBinder b(name, args, {"key", "default"});
    const Value* key = b.Get(0);
    if (key == nullptr) ThrowEval(ErrorKind::kType, "get expected at least 1 argument, got 0");
    if (key->is_string()) {
      if (const Value* v = d.Find(key->str())) return *v;
    }
    return b.GetOr(1, Value(None{}));
  }
  ArgBinder b(name, args, {});  // copy
  return self;
}

Value CallListMethod(const Value& self, std::string_view name, CallArgs& args) {
  const auto& items = self.list().items;
  if (name == "copy") {
    ArgBinder b(name, args, {});
    return self;
  }
  ArgBinder b(name, args, {"value"});
  const Value target = b.GetOr(0, Value());
  if (name == "count") {
    return Value(static_cast<int64_t>(std::count_if(
        items.begin(), items.end(), [&](const Value& v) { return Equals(v, target); })));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (Equals(items[i], target)) return Value(static_cast<int64_t>(i));
  }
  ThrowEval(ErrorKind::kType, fmt::format("{} is not in list", target.Repr()));
}

bool HasMethod(const Value& object, std::string_view name) {
  if (object.is_string()) return In(kStrMethods, name);
  if (object.is_dict()) return In(kDictMethods, name);
  if (object.is_list()) return In(kListMethods, name);
  return false;
}

bool IsUnsafe(const Value& object, std::string_view name) {
  if (object.is_list()) return In(kUnsafeListMethods, name);
  if (object.is_dict()) return In(kUnsafeDictMethods, name);
  return false;
}

}  // namespace

bool CallMethod(Interpreter& interp, const Value& object, std::string_view name, CallArgs& args,
                Value* out) {
  (void)interp;
  if (!HasMethod(object, name)) return false;
  if (object.is_string())
    *out = CallStrMethod(object.str(), name, args);
  else if (object.is_dict())
    *out = CallDictMethod(object, name, args);
  else
    *out = CallListMethod(object, name, args);
  return true;
}

bool GetMethod(const Value& object, std::string_view name, Value* out) {
  if (IsUnsafe(object, name)) {
    *out = Value(Undefined{
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, object.TypeName()),
        true});
    return true;
  }
  if (!HasMethod(object, name)) return false;
  std::string method(name);
  *out = Value(CallablePtr(std::make_shared<Callable>(
      Callable{fmt::format("{}.{}", object.TypeName(), name),
               [object, method](Interpreter& interp, CallArgs& args) -> Value {
                 Value result;
                 CallMethod(interp, object, method, args, &result);
                 return result;
               }})));
  return true;
}

}  // namespace proctor::jinja
