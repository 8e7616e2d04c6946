// Jinja2 3.1's built-in tests (`x is defined`, `x is string`, ...) and global functions
// (range, dict, namespace, cycler, joiner).
#include <fmt/format.h>

#include <algorithm>

#include "text/jinja/builtins.h"
#include "text/jinja/errors.h"
#include "text/jinja/interpreter.h"

namespace proctor::jinja {
namespace {

const Value& OneArg(CallArgs& args, std::string_view test) {
  if (args.positional.size() != 1 || !args.keyword.empty()) {
    ThrowEval(ErrorKind::kType, fmt::format("test '{}' takes exactly one argument", test));
  }
  return args.positional[0];
}
void NoArgs(CallArgs& args, std::string_view test) {
  if (!args.positional.empty() || !args.keyword.empty()) {
    ThrowEval(ErrorKind::kType, fmt::format("test '{}' takes no arguments", test));
  }
}

#define PROCTOR_SIMPLE_TEST(fn_name, test_name, expr)          \
  bool fn_name(Interpreter&, const Value& v, CallArgs& args) { \
    NoArgs(args, test_name);                                   \
    return (expr);                                             \
  }

PROCTOR_SIMPLE_TEST(Defined, "defined", !v.is_undefined())
PROCTOR_SIMPLE_TEST(IsUndefined, "undefined", v.is_undefined())
PROCTOR_SIMPLE_TEST(IsNone, "none", v.is_none())
PROCTOR_SIMPLE_TEST(Boolean, "boolean", v.is_bool())
PROCTOR_SIMPLE_TEST(IsFalse, "false", v.is_bool() && !v.as_bool())
PROCTOR_SIMPLE_TEST(IsTrue, "true", v.is_bool() && v.as_bool())
PROCTOR_SIMPLE_TEST(Integer, "integer", v.is_int())
PROCTOR_SIMPLE_TEST(IsFloat, "float", v.is_float())
PROCTOR_SIMPLE_TEST(Number, "number", v.is_number())
PROCTOR_SIMPLE_TEST(IsString, "string", v.is_string())
PROCTOR_SIMPLE_TEST(Mapping, "mapping", v.is_dict())
PROCTOR_SIMPLE_TEST(Iterable, "iterable",
                    v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
PROCTOR_SIMPLE_TEST(Sequence, "sequence",
                    v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
PROCTOR_SIMPLE_TEST(IsCallable, "callable", v.is_callable())
PROCTOR_SIMPLE_TEST(Escaped, "escaped", false)
#undef PROCTOR_SIMPLE_TEST

int64_t IntOperand(const Value& v, std::string_view test) {
  if (v.is_undefined()) FailUndefined(v);
  if (!v.is_int() && !v.is_bool()) {
    ThrowEval(ErrorKind::kType,
              fmt::format("test '{}' needs an integer, got {}", test, v.TypeName()));
  }
  return v.IntValue();
}

bool Odd(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "odd");
  return IntOperand(v, "odd") % 2 != 0;
}
bool Even(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "even");
  return IntOperand(v, "even") % 2 == 0;
}
bool DivisibleBy(Interpreter&, const Value& v, CallArgs& args) {
  const int64_t d = IntOperand(OneArg(args, "divisibleby"), "divisibleby");
  if (d == 0) ThrowEval(ErrorKind::kType, "integer division or modulo by zero");
  return IntOperand(v, "divisibleby") % d == 0;
}

bool CaseTest(const Value& v, bool upper) {
  const std::string s = v.is_string() ? v.str() : v.Str();
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (upper) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (!upper) return false;
      cased = true;
    }
  }
  return cased;
}
bool Lower(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "lower");
  return CaseTest(v, false);
}
bool Upper(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "upper");
  return CaseTest(v, true);
}

bool SameAs(Interpreter&, const Value& v, CallArgs& args) {
  const Value& other = OneArg(args, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return v.as_bool() == other.as_bool();
    case Value::Kind::kList:
      return v.list_ptr() == other.list_ptr();
    case Value::Kind::kDict:
      return v.dict_ptr() == other.dict_ptr();
    case Value::Kind::kObject:
      return v.object_ptr() == other.object_ptr();
    default:
      return Equals(v, other);
  }
}

bool In(Interpreter&, const Value& v, CallArgs& args) { return Contains(OneArg(args, "in"), v); }

#define PROCTOR_COMPARE_TEST(fn_name, op)                      \
  bool fn_name(Interpreter&, const Value& v, CallArgs& args) { \
    return CompareOp(op, v, OneArg(args, op));                 \
  }
PROCTOR_COMPARE_TEST(Eq, "==")
PROCTOR_COMPARE_TEST(Ne, "!=")
PROCTOR_COMPARE_TEST(Lt, "<")
PROCTOR_COMPARE_TEST(Le, "<=")
PROCTOR_COMPARE_TEST(Gt, ">")
PROCTOR_COMPARE_TEST(Ge, ">=")
#undef PROCTOR_COMPARE_TEST

bool IsFilter(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "filter");
  return v.is_string() && FindFilter(v.str()) != nullptr;
}
bool IsTest(Interpreter&, const Value& v, CallArgs& args) {
  NoArgs(args, "test");
  return v.is_string() && FindTest(v.str()) != nullptr;
}

constexpr TestDef kTests[] = {
    {"defined", Defined},
    {"undefined", IsUndefined},
    {"none", IsNone},
    {"boolean", Boolean},
    {"false", IsFalse},
    {"true", IsTrue},
    {"integer", Integer},
    {"float", IsFloat},
    {"number", Number},
    {"string", IsString},
    {"mapping", Mapping},
    {"iterable", Iterable},
    {"sequence", Sequence},
    {"callable", IsCallable},
    {"escaped", Escaped},
    {"odd", Odd},
    {"even", Even},
    {"divisibleby", DivisibleBy},
    {"lower", Lower},
    {"upper", Upper},
    {"sameas", SameAs},
    {"in", In},
    {"==", Eq},
    {"eq", Eq},
    {"equalto", Eq},
    {"!=", Ne},
    {"ne", Ne},
    {"<", Lt},
    {"lt", Lt},
    {"lessthan", Lt},
    {"<=", Le},
    {"le", Le},
    {">", Gt},
    {"gt", Gt},
    {"greaterthan", Gt},
    {">=", Ge},
    {"ge", Ge},
    {"filter", IsFilter},
    {"test", IsTest},
};

// ---- global functions -----------------------------------------------------------------------

// namespace(): the one mutable object, for state that must outlive a loop iteration.
class Namespace : public Object {
 public:
  std::string TypeName() const override { return "Namespace"; }
  bool GetAttr(std::string_view name, Value* out) const override {
    const Value* v = attrs_.Find(name);
    if (v == nullptr) return false;
    *out = *v;
    return true;
  }
  bool SetAttr(const std::string& name, const Value& value) override {
    attrs_.Set(name, value);
    return true;
  }
  std::string Str() const override {
    if (printing_) return "<Namespace ...>";  // it holds itself
    printing_ = true;
    std::string s = fmt::format("<Namespace {}>", Value::MakeDict(attrs_).Repr());
    printing_ = false;
    return s;
  }
  void BreakCycles() override { attrs_ = Dict(); }

 private:
  Dict attrs_;
  mutable bool printing_ = false;
};

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : state_(std::make_shared<State>()) {
    state_->items = std::move(items);
  }
  std::string TypeName() const override { return "Cycler"; }
  bool GetAttr(std::string_view name, Value* out) const override {
    if (name == "current") {
      *out = state_->items[state_->pos];
    } else if (name == "next" || name == "reset") {
      const bool next = name == "next";
      std::shared_ptr<State> state = state_;
      *out = Value(CallablePtr(std::make_shared<Callable>(
          Callable{std::string(name), [state, next](Interpreter&, CallArgs&) -> Value {
                     if (!next) {
                       state->pos = 0;
                       return Value(None{});
                     }
                     Value v = state->items[state->pos];
                     state->pos = (state->pos + 1) % state->items.size();
                     return v;
                   }})));
    } else {
      return false;
    }
    return true;
  }
  void BreakCycles() override { state_->items.assign(1, Value()); }

 private:
  struct State {  // shared with the next()/reset() callables, which may outlive the cycler
    std::vector<Value> items;
    size_t pos = 0;
  };
  std::shared_ptr<State> state_;
};

constexpr int64_t kMaxRange = 100000;  // Jinja2's sandbox MAX_RANGE

Value Range(Interpreter& interp, CallArgs& args) {
  if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3) {
    ThrowEval(ErrorKind::kType, "range expected 1 to 3 integer arguments");
  }
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (v.is_undefined()) FailUndefined(v);
    if (!v.is_int() && !v.is_bool()) {
      ThrowEval(ErrorKind::kType,
                fmt::format("'{}' object cannot be interpreted as an integer", v.TypeName()));
    }
    n.push_back(v.IntValue());
  }
  const int64_t start = n.size() == 1 ? 0 : n[0];
  const int64_t stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) ThrowEval(ErrorKind::kType, "range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) {
      ThrowEval(ErrorKind::kLimit,
                "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    out.emplace_back(i);
  }
  interp.CountIterations(static_cast<int64_t>(out.size()));
  return Value::MakeList(std::move(out));
}

Value MakeDictFn(Interpreter&, CallArgs& args) {
  Dict d;
  if (args.positional.size() > 1) ThrowEval(ErrorKind::kType, "dict expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (!src.is_dict()) ThrowEval(ErrorKind::kType, "dict() argument must be a mapping");
    for (const auto& [k, v] : src.dict().entries()) d.Set(k, v);
  }
  for (const auto& [k, v] : args.keyword) d.Set(k, v);
  return Value::MakeDict(std::move(d));
}

Value MakeNamespace(Interpreter& interp, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  interp.TrackForCleanup(ns);
  const Value init = MakeDictFn(interp, args);
  for (const auto& [k, v] : init.dict().entries()) ns->SetAttr(k, v);
  return Value(ObjectPtr(ns));
}

Value MakeCycler(Interpreter& interp, CallArgs& args) {
  if (args.positional.empty()) ThrowEval(ErrorKind::kType, "cycler needs at least one item");
  auto cycler = std::make_shared<Cycler>(args.positional);
  interp.TrackForCleanup(cycler);
  return Value(ObjectPtr(cycler));
}

Value MakeJoiner(Interpreter&, CallArgs& args) {
  ArgBinder b("joiner", args, {"sep"});
  Value sep = b.GetOr(0, Value(", "));
  auto used = std::make_shared<bool>(false);
  return Value(CallablePtr(
      std::make_shared<Callable>(Callable{"joiner", [sep, used](Interpreter&, CallArgs&) -> Value {
                                            if (!*used) {
                                              *used = true;
                                              return Value("");
                                            }
                                            return sep;
                                          }})));
}

}  // namespace

const TestDef* FindTest(std::string_view name) {
  for (const TestDef& t : kTests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool FindGlobalFunction(std::string_view name, Value* out) {
  using Fn = Value (*)(Interpreter&, CallArgs&);
  static constexpr std::pair<std::string_view, Fn> kGlobals[] = {
      {"range", Range},       {"dict", MakeDictFn},   {"namespace", MakeNamespace},
      {"cycler", MakeCycler}, {"joiner", MakeJoiner},
  };
  for (const auto& [n, fn] : kGlobals) {
    if (n == name) {
      *out = Value(CallablePtr(std::make_shared<Callable>(Callable{std::string(n), fn})));
      return true;
    }
  }
  return false;
}

}  // namespace proctor::jinja
