// Jinja2 3.1's built-in filters (with transformers' tojson), looked up by name at parse time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "text/jinja/budget.h"
#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/py_str.h"

namespace proctor::jinja {
namespace {

std::string SoftStr(const Value& v) { return v.is_string() ? v.str() : v.Str(); }

// Jinja's attribute paths: "a.b.0" -> getitem per part (integers for digit parts).
Value GetAttributePath(Interpreter& interp, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return interp.GetItem(item, attribute);
  Value v = item;
  const std::string& path = attribute.str();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? interp.GetItem(v, Value(static_cast<int64_t>(std::stoll(part))))
               : interp.GetItem(v, Value(part));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v;
}

Value Trim(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("trim", args, {"chars"});
  const Value* chars = b.Get(0);
  std::string set;
  if (chars && !chars->is_none()) set = SoftStr(*chars);
  return Value(PyStrip(SoftStr(v), (chars && !chars->is_none()) ? &set : nullptr, true, true));
}

Value Length(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("length", args, {});
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Value(int64_t{0});
    case Value::Kind::kString:
      return Value(static_cast<int64_t>(CodePointCount(v.str())));
    case Value::Kind::kList:
      return Value(static_cast<int64_t>(v.list().items.size()));
    case Value::Kind::kDict:
      return Value(static_cast<int64_t>(v.dict().size()));
    default:
      ThrowEval(ErrorKind::kType, fmt::format("object of type '{}' has no len()", v.TypeName()));
  }
}

Value ToJson(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = b.GetOr(0, Value(false)).Truthy();
  const Value indent = b.GetOr(1, Value(None{}));
  if (indent.is_int() || indent.is_bool()) {
    o.has_indent = true;
    o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.IntValue())), ' ');
  } else if (indent.is_string()) {
    o.has_indent = true;
    o.indent = indent.str();
  } else if (!indent.is_none()) {
    ThrowEval(ErrorKind::kType, "tojson indent must be an int, a str or None");
  }
  if (o.has_indent) o.item_separator = ",";
  const Value seps = b.GetOr(2, Value(None{}));
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.list().items.size() != 2 || !seps.list().items[0].is_string() ||
        !seps.list().items[1].is_string()) {
      ThrowEval(ErrorKind::kType, "tojson separators must be a pair of strings");
    }
    o.item_separator = seps.list().items[0].str();
    o.key_separator = seps.list().items[1].str();
  }
  o.sort_keys = b.GetOr(3, Value(false)).Truthy();
  return Value(DumpJson(v, o));
}

Value Join(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("join", args, {"d", "attribute"});
  const std::string sep = SoftStr(b.GetOr(0, Value("")));
  const Value* attribute = b.Get(1);
  std::string out;
  bool first = true;
  for (const Value& item : Iterate(v)) {
    const std::string text = SoftStr(attribute ? GetAttributePath(interp, item, *attribute) : item);
    CheckValueSize(out.size() + sep.size() + text.size(), "join's result");
    if (!first) out += sep;
    first = false;
    out += text;
  }
  return Value(std::move(out));
}

Value Default(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("default", args, {"default_value", "boolean"});
  const bool boolean = b.GetOr(1, Value(false)).Truthy();
  if (v.is_undefined() || (boolean && !v.Truthy())) return b.GetOr(0, Value(""));
  return v;
}

Value Upper(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("upper", args, {});
  return Value(AsciiUpper(SoftStr(v)));
}
Value Lower(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("lower", args, {});
  return Value(AsciiLower(SoftStr(v)));
}
Value Capitalize(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("capitalize", args, {});
  std::string s = AsciiLower(SoftStr(v));
  if (!s.empty()) s[0] = AsciiUpper(s.substr(0, 1))[0];
  return Value(s);
}
Value TitleFilter(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("title", args, {});
  // Jinja: words split at whitespace and - ( { [ <; first letter upper, rest lower.
  std::string s = SoftStr(v);
  bool word_start = true;
  for (char& c : s) {
    const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                     c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      continue;
    }
    if (word_start) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    word_start = false;
  }
  return Value(s);
}

Value ReplaceFilter(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("replace", args, {"old", "new", "count"});
  CallArgs call;
  call.positional = {Value(SoftStr(b.GetOr(0, Value("")))), Value(SoftStr(b.GetOr(1, Value(""))))};
  const Value count = b.GetOr(2, Value(None{}));
  if (!count.is_none()) call.positional.push_back(count);
  Value out;
  CallMethod(interp, Value(SoftStr(v)), "replace", call, &out);
  return out;
}

Value Items(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("items", args, {});
  if (v.is_undefined()) return Value::MakeList({});
  if (!v.is_dict()) ThrowEval(ErrorKind::kType, "Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().entries())
    out.push_back(Value::MakeList({Value(k), val}, true));
  return Value::MakeList(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value SelectImpl(Interpreter& interp, const Value& v, CallArgs& args, bool by_attr, bool keep) {
  const char* name = by_attr ? (keep ? "selectattr" : "rejectattr") : (keep ? "select" : "reject");
  if (!args.keyword.empty())
    ThrowEval(ErrorKind::kType, fmt::format("{}() takes no keyword arguments", name));
  size_t next = 0;
  Value attribute;
  if (by_attr) {
    if (args.positional.empty())
      ThrowEval(ErrorKind::kType, fmt::format("{}() missing the attribute", name));
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) test = SoftStr(args.positional[next++]);
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                              args.positional.end());
  std::vector<Value> out;
  for (const Value& item : Iterate(v)) {
    const Value subject = by_attr ? GetAttributePath(interp, item, attribute) : item;
    bool ok;
    if (test.empty()) {
      ok = subject.Truthy();
    } else {
      CallArgs a = test_args;
      ok = interp.ApplyTest(test, subject, a);
    }
    if (ok == keep) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}
Value Select(Interpreter& i, const Value& v, CallArgs& a) {
  return SelectImpl(i, v, a, false, true);
}
Value Reject(Interpreter& i, const Value& v, CallArgs& a) {
  return SelectImpl(i, v, a, false, false);
}
Value SelectAttr(Interpreter& i, const Value& v, CallArgs& a) {
  return SelectImpl(i, v, a, true, true);
}
Value RejectAttr(Interpreter& i, const Value& v, CallArgs& a) {
  return SelectImpl(i, v, a, true, false);
}

Value Map(Interpreter& interp, const Value& v, CallArgs& args) {
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, val] : args.keyword) {
    if (k == "attribute")
      attribute = &val;
    else if (k == "default")
      fallback = &val;
  }
  std::vector<Value> out;
  if (attribute != nullptr) {
    for (const Value& item : Iterate(v)) {
      Value x = GetAttributePath(interp, item, *attribute);
      if (x.is_undefined() && fallback != nullptr) x = *fallback;
      out.push_back(std::move(x));
    }
    return Value::MakeList(std::move(out));
  }
  if (args.positional.empty()) ThrowEval(ErrorKind::kType, "map requires a filter argument");
  const std::string filter = SoftStr(args.positional[0]);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : Iterate(v)) {
    CallArgs a = rest;
    out.push_back(interp.ApplyFilter(filter, item, a));
  }
  return Value::MakeList(std::move(out));
}

Value First(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("first", args, {});
  const std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::MakeUndefined("No first item, sequence was empty.");
  return items.front();
}
Value Last(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("last", args, {});
  const std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::MakeUndefined("No last item, sequence was empty.");
  return items.back();
}

Value String(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("string", args, {});
  return Value(SoftStr(v));
}

// Python's int(str): optional sign, digits (with _), surrounding whitespace.
bool ParseIntText(const std::string& text, int base, int64_t* out) {
  const std::string s = PyStrip(text, nullptr, true, true);
  std::string digits;
  for (char c : s)
    if (c != '_') digits += c;
  if (digits.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno != 0 || end != digits.c_str() + digits.size()) return false;
  *out = v;
  return true;
}

bool ParseFloatText(const std::string& text, double* out) {
  const std::string s = PyStrip(text, nullptr, true, true);
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

Value Int(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("int", args, {"default", "base"});
  Value fallback = b.GetOr(0, Value(int64_t{0}));
  const int base = static_cast<int>(b.IntOr(1, 10));
  if (v.is_int() || v.is_bool()) return Value(v.IntValue());
  if (v.is_float()) {
    if (!std::isfinite(v.as_float())) return fallback;
    return Value(static_cast<int64_t>(v.as_float()));
  }
  if (v.is_string()) {
    int64_t i;
    if (ParseIntText(v.str(), base, &i)) return Value(i);
    double d;
    if (ParseFloatText(v.str(), &d) && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value Float(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("float", args, {"default"});
  if (v.is_number()) return Value(v.FloatValue());
  double d;
  if (v.is_string() && ParseFloatText(v.str(), &d)) return Value(d);
  return b.GetOr(0, Value(0.0));
}

Value ListFilter(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("list", args, {});
  return Value::MakeList(Iterate(v));
}

Value Abs(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("abs", args, {});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) return Value(v.IntValue() < 0 ? -v.IntValue() : v.IntValue());
  ThrowEval(ErrorKind::kType, fmt::format("bad operand type for abs(): '{}'", v.TypeName()));
}

Value Round(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("round", args, {"precision", "method"});
  const int64_t precision = b.IntOr(0, 0);
  const std::string method = SoftStr(b.GetOr(1, Value("common")));
  if (!v.is_number()) ThrowEval(ErrorKind::kType, "round() needs a number");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.FloatValue() * scale;
  double r;
  if (method == "common")
    r = std::nearbyint(x);  // Python's round: half to even
  else if (method == "floor")
    r = std::floor(x);
  else if (method == "ceil")
    r = std::ceil(x);
  else
    ThrowEval(ErrorKind::kType, "method must be common, ceil or floor");
  return Value(r / scale);
}

Value Reverse(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("reverse", args, {});
  if (v.is_string()) {
    return Slice(v, Value(None{}), Value(None{}), Value(int64_t{-1}));
  }
  std::vector<Value> items = Iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::MakeList(std::move(items));
}

Value SortKey(Interpreter& interp, const Value& item, const Value* attribute, bool case_sensitive) {
  Value key = attribute ? GetAttributePath(interp, item, *attribute) : item;
  if (!case_sensitive && key.is_string()) return Value(AsciiLower(key.str()));
  return key;
}

Value Sort(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = b.GetOr(0, Value(false)).Truthy();
  const bool case_sensitive = b.GetOr(1, Value(false)).Truthy();
  const Value* attribute = b.Get(2);
  std::vector<Value> items = Iterate(v);
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (Value& item : items)
    keyed.emplace_back(SortKey(interp, item, attribute, case_sensitive), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? CompareOp("<", y.first, x.first) : CompareOp("<", x.first, y.first);
  });
  std::vector<Value> out;
  out.reserve(keyed.size());
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::MakeList(std::move(out));
}

Value Unique(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = b.GetOr(0, Value(false)).Truthy();
  const Value* attribute = b.Get(1);
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : Iterate(v)) {
    Value key = SortKey(interp, item, attribute, case_sensitive);
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::MakeList(std::move(out));
}

Value DictSort(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = b.GetOr(0, Value(false)).Truthy();
  const bool by_value = SoftStr(b.GetOr(1, Value("key"))) == "value";
  const bool reverse = b.GetOr(2, Value(false)).Truthy();
  if (!v.is_dict()) ThrowEval(ErrorKind::kType, "dictsort needs a mapping");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.dict().entries())
    pairs.push_back(Value::MakeList({Value(k), val}, true));
  auto key = [&](const Value& p) {
    const Value& k = p.list().items[by_value ? 1 : 0];
    return (!case_sensitive && k.is_string()) ? Value(AsciiLower(k.str())) : k;
  };
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    return reverse ? CompareOp("<", key(y), key(x)) : CompareOp("<", key(x), key(y));
  });
  return Value::MakeList(std::move(pairs));
}

Value Indent(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("indent", args, {"width", "first", "blank"});
  const Value width = b.GetOr(0, Value(int64_t{4}));
  const std::string s = SoftStr(v) + "\n";
  const uint64_t indention_bytes = width.is_string()
                                       ? width.str().size()
                                       : static_cast<uint64_t>(std::max<int64_t>(0, b.IntOr(0, 4)));
  const uint64_t line_count = static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n')) +
                              static_cast<uint64_t>(std::count(s.begin(), s.end(), '\r'));
  const uint64_t padding = SaturatingBytes(line_count + 1, indention_bytes);
  CheckValueSize(padding, "indent's result");
  CheckValueSize(s.size() + padding, "indent's result");
  const std::string indention =
      width.is_string() ? width.str() : std::string(static_cast<size_t>(indention_bytes), ' ');
  const bool first = b.GetOr(1, Value(false)).Truthy();
  const bool blank = b.GetOr(2, Value(false)).Truthy();
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += fmt::format("\n{}", indention);
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += '\n';
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
    }
  }
  if (first) rv = indention + rv;
  return Value(rv);
}

Value Sum(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("sum", args, {"attribute", "start"});
  const Value* attribute = b.Get(0);
  Value total = b.GetOr(1, Value(int64_t{0}));
  for (const Value& item : Iterate(v)) {
    total = BinaryOp("+", total, attribute ? GetAttributePath(interp, item, *attribute) : item);
  }
  return total;
}

Value MinMax(Interpreter& interp, const Value& v, CallArgs& args, bool want_max) {
  ArgBinder b(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = b.GetOr(0, Value(false)).Truthy();
  const Value* attribute = b.Get(1);
  const std::vector<Value> items = Iterate(v);
  if (items.empty()) return Value::MakeUndefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = SortKey(interp, items[0], attribute, case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = SortKey(interp, items[i], attribute, case_sensitive);
    if (CompareOp(want_max ? ">" : "<", key, best_key)) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}
Value Max(Interpreter& i, const Value& v, CallArgs& a) { return MinMax(i, v, a, true); }
Value Min(Interpreter& i, const Value& v, CallArgs& a) { return MinMax(i, v, a, false); }

Value Attr(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("attr", args, {"name"});
  return interp.GetAttr(v, SoftStr(b.GetOr(0, Value(""))));
}

Value Escape(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("escape", args, {});
  std::string out;
  for (char c : SoftStr(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value(out);
}

Value Safe(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("safe", args, {});
  return Value(SoftStr(v));
}

Value FormatFilter(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.keyword.empty())
    ThrowEval(ErrorKind::kType, "format with keyword arguments is not supported");
  Value tuple = Value::MakeList(args.positional, true);
  return BinaryOp("%", Value(SoftStr(v)), tuple);
}

Value WordCount(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("wordcount", args, {});
  int64_t n = 0;
  bool in_word = false;
  for (char c : SoftStr(v)) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || static_cast<unsigned char>(c) >= 0x80;
    if (word && !in_word) ++n;
    in_word = word;
  }
  return Value(n);
}

Value Batch(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("batch", args, {"linecount", "fill_with"});
  const int64_t n = b.IntOr(0, 1);
  if (n <= 0) ThrowEval(ErrorKind::kType, "batch size must be positive");
  const Value* fill = b.Get(1);
  if (fill && !fill->is_none())
    CheckValueSize(SaturatingBytes(static_cast<uint64_t>(n), sizeof(Value)), "a batch");
  std::vector<Value> out;
  std::vector<Value> current;
  for (const Value& item : Iterate(v)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == n) {
      out.push_back(Value::MakeList(std::move(current)));
      current.clear();
    }
  }
  if (!current.empty()) {
    if (fill && !fill->is_none()) {
      while (static_cast<int64_t>(current.size()) < n) current.push_back(*fill);
    }
    out.push_back(Value::MakeList(std::move(current)));
  }
  return Value::MakeList(std::move(out));
}

Value Center(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("center", args, {"width"});
  const std::string s = SoftStr(v);
  const int64_t width = b.IntOr(0, 80);
  const auto len = static_cast<int64_t>(CodePointCount(s));
  if (width <= len) return Value(s);
  const int64_t pad = width - len;
  CheckValueSize(s.size() + static_cast<uint64_t>(pad), "center's result");
  // CPython: left = pad / 2 + (pad & width & 1)
  const int64_t left = pad / 2 + (pad & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(pad - left), ' '));
}

constexpr FilterDef kFilters[] = {
    {"abs", Abs},
    {"attr", Attr},
    {"batch", Batch},
    {"capitalize", Capitalize},
    {"center", Center},
    {"count", Length},
    {"d", Default},
    {"default", Default},
    {"dictsort", DictSort},
    {"e", Escape},
    {"escape", Escape},
    {"first", First},
    {"float", Float},
    {"format", FormatFilter},
    {"indent", Indent},
    {"int", Int},
    {"items", Items},
    {"join", Join},
    {"last", Last},
    {"length", Length},
    {"list", ListFilter},
    {"lower", Lower},
    {"map", Map},
    {"max", Max},
    {"min", Min},
    {"reject", Reject},
    {"rejectattr", RejectAttr},
    {"replace", ReplaceFilter},
    {"reverse", Reverse},
    {"round", Round},
    {"safe", Safe},
    {"select", Select},
    {"selectattr", SelectAttr},
    {"sort", Sort},
    {"string", String},
    {"sum", Sum},
    {"title", TitleFilter},
    {"tojson", ToJson},
    {"trim", Trim},
    {"unique", Unique},
    {"upper", Upper},
    {"wordcount", WordCount},
};

}  // namespace

const FilterDef* FindFilter(std::string_view name) {
  for (const FilterDef& f : kFilters) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace proctor::jinja
