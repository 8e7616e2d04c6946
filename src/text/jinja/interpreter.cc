#include "text/jinja/interpreter.h"

#include <fmt/format.h>

#include <algorithm>

#include "text/jinja/builtins.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"
#include "text/jinja/py_str.h"

namespace proctor::jinja {
namespace {

// Jinja's `loop` object.
class LoopObject : public Object {
 public:
  LoopObject(std::vector<Value> items, int depth0, const Stmt* stmt, ScopePtr outer)
      : items_(std::move(items)), depth0_(depth0), stmt_(stmt), outer_(std::move(outer)) {}

  std::string TypeName() const override { return "LoopContext"; }
  std::string Str() const override {
    return fmt::format("<LoopContext {}/{}>", index0_ + 1, items_.size());
  }
  bool IsCallable() const override { return stmt_->recursive; }
  Value Call(Interpreter& interp, CallArgs& args) override {
    if (!stmt_->recursive) Object::Call(interp, args);
    if (args.positional.size() != 1 || !args.keyword.empty()) {
      ThrowEval(ErrorKind::kType, "loop() takes exactly one argument (the items to recurse into)");
    }
    return Value(interp.RenderLoop(*stmt_, outer_, args.positional[0], depth0_ + 1));
  }

  bool GetAttr(std::string_view name, Value* out) const override {
    const auto n = static_cast<int64_t>(items_.size());
    if (name == "index")
      *out = Value(index0_ + 1);
    else if (name == "index0")
      *out = Value(index0_);
    else if (name == "revindex")
      *out = Value(n - index0_);
    else if (name == "revindex0")
      *out = Value(n - index0_ - 1);
    else if (name == "first")
      *out = Value(index0_ == 0);
    else if (name == "last")
      *out = Value(index0_ == n - 1);
    else if (name == "length")
      *out = Value(n);
    else if (name == "depth")
      *out = Value(depth0_ + 1);
    else if (name == "depth0")
      *out = Value(depth0_);
    else if (name == "previtem") {
      *out = index0_ > 0 ? items_[static_cast<size_t>(index0_ - 1)]
                         : Value::MakeUndefined("there is no previous item");
    } else if (name == "nextitem") {
      *out = index0_ + 1 < n ? items_[static_cast<size_t>(index0_ + 1)]
                             : Value::MakeUndefined("there is no next item");
    } else if (name == "cycle") {
      const int64_t index0 = index0_;
      *out = Value(CallablePtr(std::make_shared<Callable>(
          Callable{"loop.cycle", [index0](Interpreter&, CallArgs& args) -> Value {
                     if (args.positional.empty())
                       ThrowEval(ErrorKind::kType, "no items for cycling given");
                     return args.positional[static_cast<size_t>(index0) % args.positional.size()];
                   }})));
    } else if (name == "changed") {
      std::shared_ptr<ChangedState> state = changed_;
      *out = Value(CallablePtr(std::make_shared<Callable>(
          Callable{"loop.changed", [state](Interpreter&, CallArgs& args) -> Value {
                     Value current = Value::MakeList(args.positional);
                     if (state->seen && Equals(state->last, current)) return Value(false);
                     state->seen = true;
                     state->last = current;
                     return Value(true);
                   }})));
    } else {
      return false;
    }
    return true;
  }

  void set_index0(int64_t i) { index0_ = i; }
  void BreakCycles() override {
    outer_.reset();
    items_.clear();
    changed_->last = Value();
  }

 private:
  std::vector<Value> items_;
  int64_t index0_ = 0;
  int depth0_;
  const Stmt* stmt_;
  ScopePtr outer_;
  struct ChangedState {  // loop.changed(): shared with the callables it hands out
    bool seen = false;
    Value last;
  };
  std::shared_ptr<ChangedState> changed_ = std::make_shared<ChangedState>();
};

std::string StrftimeNow(const RenderOptions& options, const std::string& format) {
  std::tm tm{};
  if (options.fixed_now) {
    tm = *options.fixed_now;
    std::tm copy = tm;
    const time_t t = timegm(&copy);  // fills tm_wday / tm_yday for the fixed date
    gmtime_r(&t, &tm);
  } else {
    const time_t now = std::time(nullptr);
    localtime_r(&now, &tm);
  }
  if (format.empty()) return "";
  std::string buf(256 + format.size() * 8, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
  buf.resize(n);
  return buf;
}

}  // namespace

struct Interpreter::DepthGuard {
  explicit DepthGuard(Interpreter* interp) : interp_(interp) {
    interp_->budget_.CheckTime();
    if (++interp_->call_depth_ > interp_->options_.limits.max_call_depth) {
      --interp_->call_depth_;
      ThrowEval(ErrorKind::kLimit, fmt::format("call depth exceeds the limit of {}",
                                               interp_->options_.limits.max_call_depth));
    }
  }
  ~DepthGuard() { --interp_->call_depth_; }
  Interpreter* interp_;
};

Interpreter::Interpreter(const std::string& template_name, const RenderOptions& options)
    : name_(template_name), options_(options), budget_(options.limits) {
  globals_["raise_exception"] = Value(CallablePtr(std::make_shared<Callable>(
      Callable{"raise_exception", [](Interpreter&, CallArgs& args) -> Value {
                 ArgBinder b("raise_exception", args, {"message"});
                 const Value* m = b.Get(0);
                 ThrowEval(ErrorKind::kRaised, m == nullptr ? "" : m->Str());
               }})));
  globals_["strftime_now"] = Value(CallablePtr(std::make_shared<Callable>(
      Callable{"strftime_now", [](Interpreter& interp, CallArgs& args) -> Value {
                 ArgBinder b("strftime_now", args, {"format"});
                 const Value* f = b.Get(0);
                 if (f == nullptr || !f->is_string()) {
                   ThrowEval(ErrorKind::kType, "strftime_now() argument must be str");
                 }
                 return Value(StrftimeNow(interp.options(), f->str()));
               }})));
  for (const auto& [k, v] : options.globals) globals_[k] = v;
}

Interpreter::~Interpreter() {
  for (const auto& weak : macro_scopes_) {
    if (auto scope = weak.lock()) scope->vars.clear();
  }
  for (const auto& weak : tracked_objects_) {
    if (auto object = weak.lock()) object->BreakCycles();
  }
}

void Interpreter::CountIterations(int64_t n) {
  budget_.CheckTime();
  iterations_ += n;
  if (iterations_ > options_.limits.max_loop_iterations) {
    ThrowEval(ErrorKind::kLimit, fmt::format("loop iterations exceed the limit of {}",
                                             options_.limits.max_loop_iterations));
  }
}

void Interpreter::Append(std::string* out, std::string_view text) const {
  if (out->size() + text.size() > options_.limits.max_output_bytes) {
    ThrowEval(ErrorKind::kLimit, fmt::format("output exceeds the limit of {} bytes",
                                             options_.limits.max_output_bytes));
  }
  out->append(text);
}

std::string Interpreter::Run(const Body& body, const Dict& context) {
  const RenderBudget::Scope budget_scope(&budget_);
  auto root = std::make_shared<Scope>();
  for (const auto& [k, v] : context.entries()) root->vars[k] = v;
  std::string out;
  Exec(body, root, &out);
  return out;
}

Value Interpreter::Lookup(const std::string& name, const ScopePtr& scope) const {
  for (const Scope* s = scope.get(); s != nullptr; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  Value fn;
  if (FindGlobalFunction(name, &fn)) return fn;
  return Value::MakeUndefined(fmt::format("'{}' is undefined", name));
}

// ---- statements -----------------------------------------------------------------------------

Interpreter::Flow Interpreter::Exec(const Body& body, const ScopePtr& scope, std::string* out) {
  for (const StmtPtr& stmt : body) {
    const Flow flow = ExecStmt(*stmt, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::ExecStmt(const Stmt& stmt, const ScopePtr& scope, std::string* out) {
  try {
    switch (stmt.kind) {
      case StmtKind::kText:
        Append(out, stmt.text);
        return Flow::kNormal;
      case StmtKind::kOutput: {
        const Value v = Eval(*stmt.expr, scope);
        Append(out, v.is_string() ? v.str() : v.Str());
        return Flow::kNormal;
      }
      case StmtKind::kIf:
        for (const auto& [cond, body] : stmt.branches) {
          if (cond == nullptr || Eval(*cond, scope).Truthy()) return Exec(body, scope, out);
        }
        return Flow::kNormal;
      case StmtKind::kFor:
        ExecFor(stmt, scope, nullptr, 0, out);
        return Flow::kNormal;
      case StmtKind::kSet:
        Assign(stmt.target, Eval(*stmt.expr, scope), scope);
        return Flow::kNormal;
      case StmtKind::kSetBlock:
      case StmtKind::kFilterBlock: {
        std::string captured;
        const Flow flow = Exec(stmt.body, scope, &captured);
        if (flow != Flow::kNormal) return flow;
        const std::string* saved = block_value_;
        block_value_ = &captured;
        Value v;
        try {
          v = Eval(*stmt.expr, scope);
        } catch (...) {
          block_value_ = saved;
          throw;
        }
        block_value_ = saved;
        if (stmt.kind == StmtKind::kSetBlock) {
          Assign(stmt.target, v, scope);
        } else {
          Append(out, v.Str());
        }
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        scope->vars[stmt.name] = MakeMacro(stmt, scope);
        return Flow::kNormal;
      case StmtKind::kCallBlock: {
        // caller() renders the block body with the call block's parameters.
        const Stmt* block = &stmt;
        Value caller(CallablePtr(std::make_shared<Callable>(Callable{
            "caller", [block, block_scope = scope](Interpreter& interp, CallArgs& args) -> Value {
              return interp.CallMacro(*block, block_scope, args);
            }})));
        const Value v = EvalCall(*stmt.expr, scope, &caller);
        Append(out, v.Str());
        return Flow::kNormal;
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
    }
  } catch (const EvalFailure& f) {
    throw TemplateError(f.kind, name_, stmt.line, f.message);
  }
  return Flow::kNormal;
}

void Interpreter::Assign(const Target& target, const Value& value, const ScopePtr& scope) {
  if (!target.attribute.empty()) {
    const Value object = Lookup(target.names[0], scope);
    if (!object.is_object() || !object.object().SetAttr(target.attribute, value)) {
      ThrowEval(ErrorKind::kType, "cannot assign attribute on non-namespace object");
    }
    return;
  }
  if (!target.is_tuple) {
    scope->vars[target.names[0]] = value;
    return;
  }
  const std::vector<Value> items = Iterate(value);
  if (items.size() != target.names.size()) {
    ThrowEval(ErrorKind::kType,
              items.size() > target.names.size()
                  ? fmt::format("too many values to unpack (expected {})", target.names.size())
                  : fmt::format("not enough values to unpack (expected {}, got {})",
                                target.names.size(), items.size()));
  }
  for (size_t i = 0; i < items.size(); ++i) scope->vars[target.names[i]] = items[i];
}

void Interpreter::ExecFor(const Stmt& stmt, const ScopePtr& scope, const Value* iterable_override,
                          int depth0, std::string* out) {
  const Value iterable = iterable_override ? *iterable_override : Eval(*stmt.expr, scope);
  std::vector<Value> items = Iterate(iterable);
  if (stmt.condition != nullptr) {
    std::vector<Value> kept;
    for (Value& item : items) {
      CountIterations(1);
      auto filter_scope = std::make_shared<Scope>();
      filter_scope->parent = scope;
      Assign(stmt.target, item, filter_scope);
      if (Eval(*stmt.condition, filter_scope).Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    Exec(stmt.else_body, scope, out);
    return;
  }
  const size_t n = items.size();
  auto loop = std::make_shared<LoopObject>(items, depth0, &stmt, scope);
  const Value loop_value{ObjectPtr(loop)};
  TrackForCleanup(loop);
  for (size_t i = 0; i < n; ++i) {
    CountIterations(1);
    auto iteration = std::make_shared<Scope>();
    iteration->parent = scope;
    Assign(stmt.target, items[i], iteration);
    iteration->vars["loop"] = loop_value;
    loop->set_index0(static_cast<int64_t>(i));
    if (Exec(stmt.body, iteration, out) == Flow::kBreak) break;
  }
}

std::string Interpreter::RenderLoop(const Stmt& stmt, const ScopePtr& scope, const Value& iterable,
                                    int depth0) {
  DepthGuard guard(this);
  std::string out;
  ExecFor(stmt, scope, &iterable, depth0, &out);
  return out;
}

Value Interpreter::MakeMacro(const Stmt& stmt, const ScopePtr& scope) {
  macro_scopes_.push_back(scope);
  const Stmt* macro = &stmt;
  return Value(CallablePtr(std::make_shared<Callable>(
      Callable{stmt.name, [macro, defining = scope](Interpreter& interp, CallArgs& args) -> Value {
                 return interp.CallMacro(*macro, defining, args);
               }})));
}

Value Interpreter::CallMacro(const Stmt& stmt, const ScopePtr& defining_scope, CallArgs& args) {
  DepthGuard guard(this);
  auto scope = std::make_shared<Scope>();
  scope->parent = defining_scope;
  std::vector<bool> bound(stmt.params.size(), false);
  std::vector<Value> varargs;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < stmt.params.size()) {
      scope->vars[stmt.params[i].name] = args.positional[i];
      bound[i] = true;
    } else {
      varargs.push_back(args.positional[i]);
    }
  }
  Dict kwargs;
  Value caller;
  for (auto& keyword : args.keyword) {
    const std::string& key = keyword.first;
    const Value& value = keyword.second;
    auto it = std::find_if(stmt.params.begin(), stmt.params.end(),
                           [&](const MacroParam& p) { return p.name == key; });
    if (it != stmt.params.end()) {
      const size_t index = static_cast<size_t>(it - stmt.params.begin());
      if (bound[index]) {
        ThrowEval(ErrorKind::kType,
                  fmt::format("macro '{}' got multiple values for argument '{}'", stmt.name, key));
      }
      scope->vars[key] = value;
      bound[index] = true;
    } else if (key == "caller") {
      caller = value;
    } else {
      kwargs.Set(key, value);
    }
  }
  for (size_t i = 0; i < stmt.params.size(); ++i) {
    if (bound[i]) continue;
    const MacroParam& p = stmt.params[i];
    scope->vars[p.name] =
        p.default_value
            ? Eval(*p.default_value, scope)
            : Value::MakeUndefined(fmt::format("parameter '{}' was not provided", p.name));
  }
  scope->vars["varargs"] = Value::MakeList(std::move(varargs), /*is_tuple=*/true);
  scope->vars["kwargs"] = Value::MakeDict(std::move(kwargs));
  if (!caller.is_undefined()) scope->vars["caller"] = caller;
  std::string out;
  Exec(stmt.body, scope, &out);
  return Value(std::move(out));
}

// ---- expressions ----------------------------------------------------------------------------

namespace {

// The expressions whose value is new (charged to the render's budget); a name, an attribute or
// an item only refers to a value that exists already.
bool Builds(ExprKind kind) {
  switch (kind) {
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
    case ExprKind::kSlice:
    case ExprKind::kCall:
    case ExprKind::kFilter:
    case ExprKind::kBinary:
    case ExprKind::kConcat:
      return true;
    default:
      return false;
  }
}

}  // namespace

Value Interpreter::Eval(const Expr& expr, const ScopePtr& scope) {
  // Expression nesting times macro depth could exhaust the stack: bound the total.
  constexpr int kMaxEvalDepth = 3000;
  if (++eval_depth_ > kMaxEvalDepth) {
    --eval_depth_;
    throw TemplateError(ErrorKind::kLimit, name_, expr.line,
                        fmt::format("expressions nest deeper than {} levels", kMaxEvalDepth));
  }
  try {
    Value v = EvalInner(expr, scope);
    if (Builds(expr.kind)) budget_.Charge(v);
    --eval_depth_;
    return v;
  } catch (const EvalFailure& f) {
    --eval_depth_;
    throw TemplateError(f.kind, name_, expr.line, f.message);
  } catch (...) {
    --eval_depth_;
    throw;
  }
}

Value Interpreter::EvalInner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName:
      return Lookup(e.name, scope);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.args.size());
      for (const ExprPtr& a : e.args) items.push_back(Eval(*a, scope));
      return Value::MakeList(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      Dict dict;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        const Value key = Eval(*e.args[i], scope);
        if (!key.is_string()) {
          ThrowEval(ErrorKind::kType,
                    fmt::format("dict keys must be strings here, got {}", key.TypeName()));
        }
        dict.Set(key.str(), Eval(*e.args[i + 1], scope));
      }
      return Value::MakeDict(std::move(dict));
    }
    case ExprKind::kGetAttr:
      return GetAttr(Eval(*e.args[0], scope), e.name);
    case ExprKind::kGetItem:
      return GetItem(Eval(*e.args[0], scope), Eval(*e.args[1], scope));
    case ExprKind::kSlice: {
      const Value subject = Eval(*e.args[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        parts[i] = e.args[static_cast<size_t>(i) + 1]
                       ? Eval(*e.args[static_cast<size_t>(i) + 1], scope)
                       : Value(None{});
      }
      return Slice(subject, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall:
      return EvalCall(e, scope, nullptr);
    case ExprKind::kFilter:
    case ExprKind::kTest: {
      const Value subject = Eval(*e.args[0], scope);
      CallArgs args;
      for (size_t i = 1; i < e.args.size(); ++i) args.positional.push_back(Eval(*e.args[i], scope));
      for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, Eval(*v, scope));
      if (e.kind == ExprKind::kFilter) return e.filter->fn(*this, subject, args);
      return Value(e.test->fn(*this, subject, args) != e.negated);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos:
      return Negate(Eval(*e.args[0], scope), e.kind == ExprKind::kNeg);
    case ExprKind::kNot:
      return Value(!Eval(*e.args[0], scope).Truthy());
    case ExprKind::kBinary:
      return BinaryOp(e.name, Eval(*e.args[0], scope), Eval(*e.args[1], scope));
    case ExprKind::kConcat: {
      std::string s;
      for (const ExprPtr& a : e.args) {
        const Value v = Eval(*a, scope);
        const std::string piece = v.is_string() ? v.str() : v.Str();
        CheckValueSize(s.size() + piece.size(), "a string joined with ~");
        s += piece;
      }
      return Value(std::move(s));
    }
    case ExprKind::kAnd: {
      Value left = Eval(*e.args[0], scope);
      return left.Truthy() ? Eval(*e.args[1], scope) : left;
    }
    case ExprKind::kOr: {
      Value left = Eval(*e.args[0], scope);
      return left.Truthy() ? left : Eval(*e.args[1], scope);
    }
    case ExprKind::kCompare: {
      Value left = Eval(*e.args[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = Eval(*e.args[i + 1], scope);
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "in")
          ok = Contains(right, left);
        else if (op == "notin")
          ok = !Contains(right, left);
        else
          ok = CompareOp(op, left, right);
        if (!ok) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::kCondExpr: {
      if (Eval(*e.args[0], scope).Truthy()) return Eval(*e.args[1], scope);
      if (e.args[2]) return Eval(*e.args[2], scope);
      return Value::MakeUndefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.",
          e.line));
    }
    case ExprKind::kBlockValue:
      return Value(block_value_ ? *block_value_ : std::string());
  }
  return Value();
}

Value Interpreter::EvalCall(const Expr& e, const ScopePtr& scope, const Value* caller) {
  CallArgs args;
  args.positional.reserve(e.args.size() - 1);
  for (size_t i = 1; i < e.args.size(); ++i) args.positional.push_back(Eval(*e.args[i], scope));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, Eval(*v, scope));
  if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
  const Expr& callee = *e.args[0];
  if (callee.kind == ExprKind::kGetAttr) {
    // obj.method(...) on str/dict/list calls the method without building a bound object.
    const Value object = Eval(*callee.args[0], scope);
    Value result;
    if (CallMethod(*this, object, callee.name, args, &result)) return result;
    return CallValue(GetAttr(object, callee.name), args);
  }
  return CallValue(Eval(callee, scope), args);
}

Value Interpreter::CallValue(const Value& callee, CallArgs& args) {
  if (callee.kind() == Value::Kind::kCallable) return callee.callable().fn(*this, args);
  if (callee.is_object() && callee.object().IsCallable()) return callee.object().Call(*this, args);
  if (callee.is_undefined()) FailUndefined(callee);
  ThrowEval(ErrorKind::kType, fmt::format("'{}' object is not callable", callee.TypeName()));
}

Value Interpreter::GetAttr(const Value& object, std::string_view name) {
  if (object.is_undefined()) FailUndefined(object);
  if (!name.empty() && name[0] == '_') {
    Undefined u{
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, object.TypeName()),
        true};
    return Value(std::move(u));
  }
  Value out;
  if (GetMethod(object, name, &out)) return out;
  if (object.is_dict()) {
    if (const Value* v = object.dict().Find(name)) return *v;
  } else if (object.is_object()) {
    if (object.object().GetAttr(name, &out)) return out;
  }
  return Value::MakeUndefined(
      fmt::format("{} has no attribute {}", StringRepr(object.TypeRepr()), StringRepr(name)));
}

Value Interpreter::GetItem(const Value& object, const Value& key) {
  if (object.is_undefined()) FailUndefined(object);
  if (object.is_dict() && key.is_string()) {
    if (const Value* v = object.dict().Find(key.str())) return *v;
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    Value v = Index(object, key.IntValue());
    if (!v.is_undefined()) return v;
  }
  if (key.is_string()) return GetAttr(object, key.str());
  return Value::MakeUndefined(fmt::format("{} has no element {}", object.TypeRepr(), key.Repr()));
}

Value Interpreter::ApplyFilter(std::string_view name, const Value& subject, CallArgs& args) {
  const FilterDef* f = FindFilter(name);
  if (f == nullptr) ThrowEval(ErrorKind::kType, fmt::format("No filter named '{}'.", name));
  return f->fn(*this, subject, args);
}

bool Interpreter::ApplyTest(std::string_view name, const Value& subject, CallArgs& args) {
  const TestDef* t = FindTest(name);
  if (t == nullptr) ThrowEval(ErrorKind::kType, fmt::format("No test named '{}'.", name));
  return t->fn(*this, subject, args);
}

// ---- Template -------------------------------------------------------------------------------

Template Template::Parse(std::string_view source, std::string name) {
  Template t;
  t.name_ = std::move(name);
  const std::vector<Token> tokens = Tokenize(source, t.name_);
  t.body_ = std::make_shared<const Body>(jinja::Parse(tokens, t.name_));
  return t;
}

std::string Template::Render(const Dict& context, const RenderOptions& options) const {
  Interpreter interp(name_, options);
  try {
    return interp.Run(*body_, context);
  } catch (const EvalFailure& f) {
    throw TemplateError(f.kind, name_, 0, f.message);
  }
}

}  // namespace proctor::jinja
