// Jinja's built-in filters, tests and global functions, and the methods of str, dict and list
// that templates call (message.content.strip(), dict.items(), ...), with Jinja2 3.1 / Python 3
// semantics and transformers' overrides (tojson keeps key order and takes indent/separators).
#pragma once

#include <string>
#include <string_view>

#include "text/jinja/value.h"

namespace proctor::jinja {

using FilterFn = Value (*)(Interpreter& interp, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Interpreter& interp, const Value& subject, CallArgs& args);

struct FilterDef {
  std::string_view name;
  FilterFn fn;
};
struct TestDef {
  std::string_view name;
  TestFn fn;
};

const FilterDef* FindFilter(std::string_view name);  // nullptr when unknown
const TestDef* FindTest(std::string_view name);

// Global functions: range, dict, namespace, cycler, joiner (raise_exception and strftime_now
// are added by the interpreter because they depend on render options).
bool FindGlobalFunction(std::string_view name, Value* out);

// obj.name for str/dict/list methods: true with *out set to the bound method, false if the
// type has no such method. Unsafe (mutating) methods give an Undefined that raises a
// SecurityError when used, as the immutable sandbox does.
bool GetMethod(const Value& object, std::string_view name, Value* out);
// Calls object.name(args) directly (no bound-method object); false when there is no method.
bool CallMethod(Interpreter& interp, const Value& object, std::string_view name, CallArgs& args,
                Value* out);

// Binds call arguments to named parameters like a Python signature; errors name the function.
class ArgBinder {
 public:
  ArgBinder(std::string_view function, CallArgs& args,
            std::initializer_list<std::string_view> params);
  const Value* Get(size_t index) const;  // nullptr when not passed
  Value GetOr(size_t index, Value fallback) const;
  // An int (or bool) argument, `fallback` when not passed; Python's TypeError for any other type.
  int64_t IntOr(size_t index, int64_t fallback) const;
  size_t positional_count() const { return args_.positional.size(); }

 private:
  CallArgs& args_;
  std::vector<const Value*> bound_;
};

// Python's iteration over a value (list items, dict keys, string characters); Undefined is
// empty. Throws EvalFailure(kType) for values that are not iterable.
std::vector<Value> Iterate(const Value& value);

// Python operators. A string or list they would build beyond the render's budget is an
// EvalFailure(kLimit) (text/jinja/budget.h).
Value BinaryOp(std::string_view op, const Value& a, const Value& b);
bool CompareOp(std::string_view op, const Value& a, const Value& b);
bool Contains(const Value& container, const Value& item);
Value Negate(const Value& v, bool minus);
// subject[start:stop:step] (None parts omitted) for strings (by code point) and lists.
Value Slice(const Value& subject, const Value& start, const Value& stop, const Value& step);
// subject[index] for strings and lists, negative from the end; Undefined when out of range.
Value Index(const Value& subject, int64_t index);

// Raises the UndefinedError (or SecurityError) an Undefined carries.
[[noreturn]] void FailUndefined(const Value& undefined);

}  // namespace proctor::jinja
