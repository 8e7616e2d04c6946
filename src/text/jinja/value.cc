#include "text/jinja/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "text/jinja/budget.h"
#include "text/jinja/errors.h"
#include "text/jinja/py_str.h"
#include "util/utf8.h"

namespace proctor::jinja {

// ---- Dict -----------------------------------------------------------------------------------

namespace {
constexpr size_t kLinearScanLimit = 8;  // small dicts (messages) are scanned, larger indexed
}  // namespace

const Value* Dict::Find(std::string_view key) const {
  if (index_.empty()) {
    for (const auto& [k, v] : entries_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  auto it = index_.find(std::string(key));
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void Dict::Set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (index_.empty() && k == key) {
      v = std::move(value);
      return;
    }
  }
  if (!index_.empty()) {
    auto it = index_.find(key);
    if (it != index_.end()) {
      entries_[it->second].second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (entries_.size() > kLinearScanLimit) {
    if (index_.empty()) {
      for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
    } else {
      index_.emplace(entries_.back().first, entries_.size() - 1);
    }
  }
}

// ---- Object ---------------------------------------------------------------------------------

bool Object::SetAttr(const std::string&, const Value&) { return false; }
std::string Object::Str() const { return fmt::format("<{} object>", TypeName()); }
Value Object::Call(Interpreter&, CallArgs&) {
  ThrowEval(ErrorKind::kType, fmt::format("'{}' object is not callable", TypeName()));
}

// ---- Value ----------------------------------------------------------------------------------

int NestingDepth(const Value& v) {
  if (v.is_list()) return v.list().depth;
  if (v.is_dict()) return v.dict().depth();
  return 0;
}

namespace {

// Containers nest at most kMaxValueDepth deep: repr, tojson, comparison and destruction recurse
// once per level, and a loop of `{% set ns.x = [ns.x] %}` would otherwise nest 10^5 deep.
int DepthOver(int deepest_item) {
  if (deepest_item + 1 > kMaxValueDepth) {
    ThrowEval(ErrorKind::kLimit,
              fmt::format("a list or dict would nest deeper than {} levels", kMaxValueDepth));
  }
  return deepest_item + 1;
}

}  // namespace

Value Value::MakeList(std::vector<Value> items, bool is_tuple) {
  int deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, NestingDepth(item));
  auto list = std::make_shared<List>();
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  list->depth = DepthOver(deepest);
  return Value(ListPtr(std::move(list)));
}

Value Value::MakeDict(Dict dict) {
  int deepest = 0;
  for (const auto& [key, item] : dict.entries()) deepest = std::max(deepest, NestingDepth(item));
  dict.depth_ = DepthOver(deepest);
  return Value(DictPtr(std::make_shared<Dict>(std::move(dict))));
}

bool Value::is_callable() const {
  return kind() == Kind::kCallable || (is_object() && object().IsCallable());
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !list().items.empty();
    case Kind::kDict:
      return dict().size() != 0;
    case Kind::kCallable:
    case Kind::kObject:
      return true;
  }
  return false;
}

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-d.ddde+XX": shortest round-trip digits
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  const int decpt = exponent + 1;  // position of the decimal point after the first digit
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += fmt::format("0.{}{}", std::string(static_cast<size_t>(-decpt), '0'), digits);
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += fmt::format(".{}", digits.substr(1));
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  return out;
}

std::string StringRepr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t cp = DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
    if (cp == static_cast<char32_t>(quote) || cp == U'\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out += quote;
  return out;
}

namespace {

// repr() of containers appends element by element and checks the render's budget as the text
// grows, so the repr of a list of large strings stops at the bound instead of after it.
void AppendRepr(const Value& v, std::string* out);

void AppendChecked(std::string* out, std::string_view text) {
  CheckValueSize(out->size() + text.size(), "the text of a list or dict");
  out->append(text);
}

void AppendItemsRepr(const std::vector<Value>& items, std::string* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out->append(", ");
    AppendRepr(items[i], out);
  }
}

void AppendRepr(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Value::Kind::kList: {
      const List& l = v.list();
      out->push_back(l.is_tuple ? '(' : '[');
      AppendItemsRepr(l.items, out);
      if (l.is_tuple && l.items.size() == 1) out->push_back(',');
      out->push_back(l.is_tuple ? ')' : ']');
      return;
    }
    case Value::Kind::kDict: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, item] : v.dict().entries()) {
        if (!first) out->append(", ");
        first = false;
        AppendChecked(out, StringRepr(k));
        out->append(": ");
        AppendRepr(item, out);
      }
      out->push_back('}');
      return;
    }
    default:
      AppendChecked(out, v.Repr());
  }
}

}  // namespace

std::string Value::Str() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str();
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return as_bool() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(as_int());
    case Kind::kFloat:
      return FloatRepr(as_float());
    case Kind::kString:
      return StringRepr(str());
    case Kind::kList:
    case Kind::kDict: {
      std::string out;
      AppendRepr(*this, &out);
      return out;
    }
    case Kind::kCallable:
      return fmt::format("<function {}>", callable().name);
    case Kind::kObject:
      return object().Str();
  }
  return "";
}

std::string Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list().is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kCallable:
      return "function";
    case Kind::kObject:
      return object().TypeName();
  }
  return "";
}

std::string Value::TypeRepr() const {
  if (is_none()) return "None";
  return TypeName() + " object";
}

bool Equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.FloatValue() == b.FloatValue();
    return a.IntValue() == b.IntValue();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.str() == b.str();
    case K::kList: {
      const List& x = a.list();
      const List& y = b.list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    case K::kCallable:
      return &a.callable() == &b.callable();
    case K::kObject:
      return a.object_ptr() == b.object_ptr();
    default:
      return false;
  }
}

// ---- JSON -----------------------------------------------------------------------------------

namespace {

Value FromJsonAt(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxJsonDepth) {
    ThrowEval(ErrorKind::kType,
              fmt::format("the JSON nests deeper than {} levels (lists and objects inside each "
                          "other); templates take data, not such structures",
                          kMaxJsonDepth));
  }
  using T = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case T::null:
      return Value(None{});
    case T::boolean:
      return Value(json.get<bool>());
    case T::number_integer:
      return Value(json.get<int64_t>());
    case T::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        ThrowEval(ErrorKind::kType,
                  fmt::format("integer {} is too large (proctor keeps 64 bits)", u));
      }
      return Value(static_cast<int64_t>(u));
    }
    case T::number_float:
      return Value(json.get<double>());
    case T::string:
      return Value(json.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(FromJsonAt(item, depth + 1));
      return Value::MakeList(std::move(items));
    }
    case T::object: {
      Dict dict;
      for (const auto& [k, v] : json.items()) dict.Set(k, FromJsonAt(v, depth + 1));
      return Value::MakeDict(std::move(dict));
    }
    default:
      ThrowEval(ErrorKind::kType, "unsupported JSON value (binary)");
  }
}

}  // namespace

Value FromJson(const nlohmann::ordered_json& json) { return FromJsonAt(json, 1); }

namespace {

void DumpJsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t cp = DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
    switch (cp) {
      case U'"':
        *out += "\\\"";
        break;
      case U'\\':
        *out += "\\\\";
        break;
      case U'\n':
        *out += "\\n";
        break;
      case U'\r':
        *out += "\\r";
        break;
      case U'\t':
        *out += "\\t";
        break;
      case U'\b':
        *out += "\\b";
        break;
      case U'\f':
        *out += "\\f";
        break;
      default:
        if (cp < 0x20) {
          *out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
        } else if (ensure_ascii && cp >= 0x80) {
          if (cp >= 0x10000) {
            const char32_t v = cp - 0x10000;
            *out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xd800 + (v >> 10)),
                                static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
          } else {
            *out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
          }
        } else {
          out->append(s.substr(start, i - start));
        }
    }
  }
  *out += '"';
}

void DumpJsonValue(const Value& v, const JsonDumpOptions& o, int depth, std::string* out) {
  if (depth > 200) ThrowEval(ErrorKind::kLimit, "tojson: nesting deeper than 200 levels");
  CheckValueSize(out->size(), "tojson's text");
  auto newline = [&](int level) {
    if (!o.has_indent) return;
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      *out += "null";
      return;
    case Value::Kind::kBool:
      *out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      *out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      if (std::isnan(d))
        *out += "NaN";
      else if (std::isinf(d))
        *out += d > 0 ? "Infinity" : "-Infinity";
      else
        *out += FloatRepr(d);
      return;
    }
    case Value::Kind::kString:
      CheckValueSize(out->size() + v.str().size(), "tojson's text");
      DumpJsonString(v.str(), o.ensure_ascii, out);
      return;
    case Value::Kind::kList: {
      const auto& items = v.list().items;
      if (items.empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += o.item_separator;
        newline(depth + 1);
        DumpJsonValue(items[i], o, depth + 1, out);
      }
      newline(depth);
      *out += ']';
      return;
    }
    case Value::Kind::kDict: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict().entries()) entries.push_back(&e);
      if (entries.empty()) {
        *out += "{}";
        return;
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) *out += o.item_separator;
        newline(depth + 1);
        DumpJsonString(entries[i]->first, o.ensure_ascii, out);
        *out += o.key_separator;
        DumpJsonValue(entries[i]->second, o, depth + 1, out);
      }
      newline(depth);
      *out += '}';
      return;
    }
    default:
      ThrowEval(ErrorKind::kType,
                fmt::format("Object of type {} is not JSON serializable", v.TypeName()));
  }
}

}  // namespace

std::string DumpJson(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  DumpJsonValue(value, options, 0, &out);
  return out;
}

}  // namespace proctor::jinja
