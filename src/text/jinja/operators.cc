// Python's operators over Values: arithmetic, comparison, membership, indexing, slicing,
// iteration, and argument binding for builtins.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "text/jinja/budget.h"
#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/py_str.h"
#include "util/utf8.h"

namespace proctor::jinja {

[[noreturn]] void FailUndefined(const Value& undefined) {
  const Undefined& u = undefined.undefined();
  ThrowEval(u.unsafe ? ErrorKind::kSecurity : ErrorKind::kUndefined, u.hint);
}

// ---- ArgBinder ------------------------------------------------------------------------------

ArgBinder::ArgBinder(std::string_view function, CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : args_(args), bound_(params.size(), nullptr) {
  if (args.positional.size() > params.size()) {
    ThrowEval(ErrorKind::kType, fmt::format("{}() takes at most {} argument(s) ({} given)",
                                            function, params.size(), args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) {
      ThrowEval(ErrorKind::kType,
                fmt::format("{}() got an unexpected keyword argument '{}'", function, key));
    }
    const size_t index = static_cast<size_t>(it - params.begin());
    if (bound_[index] != nullptr) {
      ThrowEval(ErrorKind::kType,
                fmt::format("{}() got multiple values for argument '{}'", function, key));
    }
    bound_[index] = &value;
  }
}

const Value* ArgBinder::Get(size_t index) const { return bound_[index]; }

Value ArgBinder::GetOr(size_t index, Value fallback) const {
  if (bound_[index] != nullptr) return *bound_[index];
  return fallback;
}

int64_t ArgBinder::IntOr(size_t index, int64_t fallback) const {
  const Value* v = bound_[index];
  if (v == nullptr) return fallback;
  if (v->is_undefined()) FailUndefined(*v);
  if (!v->is_int() && !v->is_bool()) {
    ThrowEval(ErrorKind::kType,
              fmt::format("'{}' object cannot be interpreted as an integer", v->TypeName()));
  }
  return v->IntValue();
}

// ---- iteration, indexing, slicing -----------------------------------------------------------

std::vector<Value> Iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      if (value.undefined().unsafe) FailUndefined(value);
      return {};
    case Value::Kind::kList:
      return value.list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(value.dict().size());
      for (const auto& [k, v] : value.dict().entries()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = value.str();
      CheckValueSize(CodePointCount(s) * sizeof(Value), "the list of a string's characters");
      for (size_t i = 0; i < s.size();) {
        const size_t start = i;
        DecodeUtf8(s, &i, InvalidByte::kAsLatin1);
        chars.emplace_back(s.substr(start, i - start));
      }
      return chars;
    }
    default:
      ThrowEval(ErrorKind::kType, fmt::format("'{}' object is not iterable", value.TypeName()));
  }
}

Value Index(const Value& subject, int64_t index) {
  if (subject.is_list()) {
    const auto& items = subject.list().items;
    const auto n = static_cast<int64_t>(items.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return Value();
    return items[static_cast<size_t>(index)];
  }
  if (subject.is_string()) {
    const std::string& s = subject.str();
    if (IsAscii(s)) {
      const auto n = static_cast<int64_t>(s.size());
      if (index < 0) index += n;
      if (index < 0 || index >= n) return Value();
      return Value(std::string(1, s[static_cast<size_t>(index)]));
    }
    const std::vector<size_t> off = CodePointOffsets(s);
    const auto n = static_cast<int64_t>(off.size() - 1);
    if (index < 0) index += n;
    if (index < 0 || index >= n) return Value();
    const auto i = static_cast<size_t>(index);
    return Value(s.substr(off[i], off[i + 1] - off[i]));
  }
  return Value();
}

namespace {

// CPython's PySlice_Unpack + PySlice_AdjustIndices: the slice visits start, start + step, ...,
// `count` indices in all.
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

SliceRange AdjustSlice(int64_t length, const Value& start_v, const Value& stop_v,
                       const Value& step_v) {
  const auto as_index = [](const Value& v, const char* what) -> int64_t {
    if (v.is_int() || v.is_bool()) return v.IntValue();
    if (v.is_undefined()) FailUndefined(v);
    ThrowEval(ErrorKind::kType, fmt::format("slice indices must be integers or None, not {} ({})",
                                            v.TypeName(), what));
  };
  const int64_t step = step_v.is_none() ? 1 : as_index(step_v, "step");
  if (step == 0) ThrowEval(ErrorKind::kType, "slice step cannot be zero");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int64_t start = start_v.is_none() ? (step < 0 ? kMax : 0) : as_index(start_v, "start");
  int64_t stop = stop_v.is_none() ? (step < 0 ? kMin : kMax) : as_index(stop_v, "stop");
  const auto adjust = [&](int64_t* i) {
    if (*i < 0) {
      *i = (*i == kMin) ? -1 : *i + length;
      if (*i < 0) *i = step < 0 ? -1 : 0;
    } else if (*i >= length) {
      *i = step < 0 ? length - 1 : length;
    }
  };
  adjust(&start);
  adjust(&stop);
  SliceRange r{start, step, 0};
  if (step > 0 && start < stop) r.count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) r.count = (start - stop - 1) / -step + 1;
  return r;
}

}  // namespace

Value Slice(const Value& subject, const Value& start, const Value& stop, const Value& step) {
  if (subject.is_undefined()) FailUndefined(subject);
  if (subject.is_list()) {
    const auto& items = subject.list().items;
    const SliceRange r = AdjustSlice(static_cast<int64_t>(items.size()), start, stop, step);
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(r.count));
    for (int64_t k = 0; k < r.count; ++k)
      out.push_back(items[static_cast<size_t>(r.start + k * r.step)]);
    return Value::MakeList(std::move(out), subject.list().is_tuple);
  }
  if (subject.is_string()) {
    const std::string& s = subject.str();
    const size_t code_points = CodePointCount(s);
    const SliceRange r = AdjustSlice(static_cast<int64_t>(code_points), start, stop, step);
    if (r.count == 0) return Value(std::string());
    if (code_points == s.size() && r.step == 1) {  // ASCII, contiguous: one copy
      return Value(s.substr(static_cast<size_t>(r.start), static_cast<size_t>(r.count)));
    }
    const std::vector<size_t> off = CodePointOffsets(s);
    std::string out;
    for (int64_t k = 0; k < r.count; ++k) {
      const auto i = static_cast<size_t>(r.start + k * r.step);
      out.append(s, off[i], off[i + 1] - off[i]);
    }
    return Value(std::move(out));
  }
  return Value::MakeUndefined(fmt::format("{} has no element slice", subject.TypeRepr()));
}

// ---- arithmetic -----------------------------------------------------------------------------

namespace {

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void Unsupported(std::string_view op, const Value& a, const Value& b) {
  ThrowEval(ErrorKind::kType, fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                          a.TypeName(), b.TypeName()));
}

[[noreturn]] void Overflow() {
  ThrowEval(ErrorKind::kType, "integer overflow (proctor keeps 64 bits)");
}

Value Repeat(const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  if (seq.is_string()) {
    const std::string& s = seq.str();
    CheckValueSize(SaturatingBytes(static_cast<uint64_t>(times), s.size()), "a repeated string");
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.list().items;
  CheckValueSize(SaturatingBytes(static_cast<uint64_t>(times), BytesOf(seq)), "a repeated list");
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::MakeList(std::move(out), seq.list().is_tuple);
}

Value PercentFormat(const std::string& format, const Value& args) {
  std::vector<Value> values =
      args.is_list() && args.list().is_tuple ? args.list().items : std::vector<Value>{args};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) ThrowEval(ErrorKind::kType, "incomplete format");
    const char c = format[i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size())
      ThrowEval(ErrorKind::kType, "not enough arguments for format string");
    const Value& v = values[next++];
    CheckValueSize(out.size(), "a %-formatted string");
    if (c == 's')
      out += v.Str();
    else if (c == 'r')
      out += v.Repr();
    else if ((c == 'd' || c == 'i') && v.is_number())
      out += std::to_string(static_cast<int64_t>(v.FloatValue()));
    else
      ThrowEval(ErrorKind::kType, fmt::format("unsupported format character '{}'", c));
  }
  if (next < values.size()) {
    ThrowEval(ErrorKind::kType, "not all arguments converted during string formatting");
  }
  CheckValueSize(out.size(), "a %-formatted string");
  return Value(std::move(out));
}

}  // namespace

Value BinaryOp(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  const bool ints = IsIntLike(a) && IsIntLike(b);
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(a.IntValue(), b.IntValue(), &r)) Overflow();
      return Value(r);
    }
    if (nums) return Value(a.FloatValue() + b.FloatValue());
    if (a.is_string() && b.is_string()) {
      CheckValueSize(a.str().size() + b.str().size(), "a string joined with +");
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple) {
      CheckValueSize(BytesOf(a) + BytesOf(b), "a list joined with +");
      std::vector<Value> items = a.list().items;
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::MakeList(std::move(items), a.list().is_tuple);
    }
    if (a.is_string() || a.is_list()) {
      ThrowEval(ErrorKind::kType, fmt::format("can only concatenate {} (not \"{}\") to {}",
                                              a.TypeName(), b.TypeName(), a.TypeName()));
    }
    Unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(a.IntValue(), b.IntValue(), &r)) Overflow();
      return Value(r);
    }
    if (nums) return Value(a.FloatValue() - b.FloatValue());
    Unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(a.IntValue(), b.IntValue(), &r)) Overflow();
      return Value(r);
    }
    if (nums) return Value(a.FloatValue() * b.FloatValue());
    if ((a.is_string() || a.is_list()) && IsIntLike(b)) return Repeat(a, b.IntValue());
    if ((b.is_string() || b.is_list()) && IsIntLike(a)) return Repeat(b, a.IntValue());
    if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
      ThrowEval(ErrorKind::kType,
                fmt::format("can't multiply sequence by non-int of type '{}'",
                            (a.is_string() || a.is_list()) ? b.TypeName() : a.TypeName()));
    }
    Unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) Unsupported(op, a, b);
    if (b.FloatValue() == 0) ThrowEval(ErrorKind::kType, "division by zero");
    return Value(a.FloatValue() / b.FloatValue());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return PercentFormat(a.str(), b);
    if (!nums) Unsupported(op, a, b);
    if (ints) {
      const int64_t x = a.IntValue();
      const int64_t y = b.IntValue();
      if (y == 0) ThrowEval(ErrorKind::kType, "integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) Overflow();
      int64_t q = x / y;
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return op == "//" ? Value(q) : Value(r);
    }
    const double x = a.FloatValue();
    const double y = b.FloatValue();
    if (y == 0)
      ThrowEval(ErrorKind::kType, op == "//" ? "float floor division by zero" : "float modulo");
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    if (op == "%") return Value(r == 0 ? std::copysign(0.0, y) : r);
    return Value(std::floor((x - r) / y + 0.0));
  }
  if (op == "**") {
    if (!nums) Unsupported(op, a, b);
    if (ints && b.IntValue() >= 0) {
      int64_t result = 1;
      int64_t base = a.IntValue();
      for (int64_t e = b.IntValue(); e > 0; --e) {
        if (__builtin_mul_overflow(result, base, &result)) Overflow();
        if (result == 0 || result == 1) break;
      }
      return Value(result);
    }
    if (a.FloatValue() == 0 && b.FloatValue() < 0) {
      ThrowEval(ErrorKind::kType, "0.0 cannot be raised to a negative power");
    }
    return Value(std::pow(a.FloatValue(), b.FloatValue()));
  }
  ThrowEval(ErrorKind::kType, fmt::format("unknown operator {}", op));
}

Value Negate(const Value& v, bool minus) {
  if (v.is_undefined()) FailUndefined(v);
  if (IsIntLike(v)) {
    if (!minus) return Value(v.IntValue());
    if (v.IntValue() == std::numeric_limits<int64_t>::min()) Overflow();
    return Value(-v.IntValue());
  }
  if (v.is_float()) return Value(minus ? -v.as_float() : v.as_float());
  ThrowEval(ErrorKind::kType,
            fmt::format("bad operand type for unary {}: '{}'", minus ? '-' : '+', v.TypeName()));
}

// ---- comparison -----------------------------------------------------------------------------

namespace {

// -1, 0, 1; throws the TypeError Python raises for unorderable types.
int Order(std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) FailUndefined(a);
  if (b.is_undefined()) FailUndefined(b);
  if (a.is_number() && b.is_number()) {
    if (IsIntLike(a) && IsIntLike(b))
      return a.IntValue() < b.IntValue() ? -1 : a.IntValue() > b.IntValue();
    const double x = a.FloatValue();
    const double y = b.FloatValue();
    if (std::isnan(x) || std::isnan(y)) return 2;  // every ordering is false
    return x < y ? -1 : x > y;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_list() && b.is_list() && a.list().is_tuple == b.list().is_tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Equals(x[i], y[i])) return Order(op, x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  ThrowEval(ErrorKind::kType, fmt::format("'{}' not supported between instances of '{}' and '{}'",
                                          op, a.TypeName(), b.TypeName()));
}

}  // namespace

bool CompareOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Equals(a, b);
  if (op == "!=") return !Equals(a, b);
  const int c = Order(op, a, b);
  if (c == 2) return false;
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  if (op == ">=") return c >= 0;
  ThrowEval(ErrorKind::kType, fmt::format("unknown comparison {}", op));
}

bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (item.is_undefined()) FailUndefined(item);
      if (!item.is_string()) {
        ThrowEval(
            ErrorKind::kType,
            fmt::format("'in <string>' requires string as left operand, not {}", item.TypeName()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      return std::any_of(container.list().items.begin(), container.list().items.end(),
                         [&](const Value& v) { return Equals(v, item); });
    case Value::Kind::kDict:
      return item.is_string() && container.dict().Find(item.str()) != nullptr;
    case Value::Kind::kUndefined:
      if (container.undefined().unsafe) FailUndefined(container);
      return false;
    default:
      ThrowEval(ErrorKind::kType,
                fmt::format("argument of type '{}' is not iterable", container.TypeName()));
  }
}

}  // namespace proctor::jinja
