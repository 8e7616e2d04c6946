// Values of the Jinja interpreter, with Python's semantics (what Jinja2 inherits from Python):
// truthiness, equality, ordering, str()/repr() text, and conversion from/to JSON.
//
// A Value is small and cheap to copy: scalars inline, strings by value, containers shared
// (templates run in an immutable sandbox, so a list or dict never changes after it is built;
// only namespace() objects are mutable).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace proctor::jinja {

class Value;
class Interpreter;

// Jinja's Undefined: falsy, prints as "", fails when used in arithmetic, attribute access,
// calls. `hint` is the message of that failure (Jinja2's wording, e.g. "'x' is undefined").
struct Undefined {
  std::string hint;
  bool unsafe = false;  // the sandbox refused the attribute: using it is a SecurityError
};
struct None {};

struct List;
class Dict;
struct Callable;
class Object;

using ListPtr = std::shared_ptr<const List>;
using DictPtr = std::shared_ptr<const Dict>;
using CallablePtr = std::shared_ptr<const Callable>;
using ObjectPtr = std::shared_ptr<Object>;

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable,
    kObject
  };

  Value() : v_(Undefined{}) {}
  Value(Undefined u) : v_(std::move(u)) {}      // NOLINT: implicit like Python values
  Value(None) : v_(None{}) {}                   // NOLINT
  Value(bool b) : v_(b) {}                      // NOLINT
  Value(int64_t i) : v_(i) {}                   // NOLINT
  Value(int i) : v_(int64_t{i}) {}              // NOLINT
  Value(double d) : v_(d) {}                    // NOLINT
  Value(std::string s) : v_(std::move(s)) {}    // NOLINT
  Value(const char* s) : v_(std::string(s)) {}  // NOLINT
  Value(ListPtr l) : v_(std::move(l)) {}        // NOLINT
  Value(DictPtr d) : v_(std::move(d)) {}        // NOLINT
  Value(CallablePtr c) : v_(std::move(c)) {}    // NOLINT
  Value(ObjectPtr o) : v_(std::move(o)) {}      // NOLINT

  static Value MakeList(std::vector<Value> items, bool is_tuple = false);
  static Value MakeDict(Dict dict);
  static Value MakeUndefined(std::string hint) { return Value(Undefined{std::move(hint)}); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const;
  bool is_object() const { return kind() == Kind::kObject; }

  const Undefined& undefined() const { return std::get<Undefined>(v_); }
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& str() const { return std::get<std::string>(v_); }
  const List& list() const { return *std::get<ListPtr>(v_); }
  const ListPtr& list_ptr() const { return std::get<ListPtr>(v_); }
  const Dict& dict() const { return *std::get<DictPtr>(v_); }
  const DictPtr& dict_ptr() const { return std::get<DictPtr>(v_); }
  const Callable& callable() const { return *std::get<CallablePtr>(v_); }
  Object& object() const { return *std::get<ObjectPtr>(v_); }
  const ObjectPtr& object_ptr() const { return std::get<ObjectPtr>(v_); }

  // Numbers as Python sees them (bool is an int).
  int64_t IntValue() const { return is_bool() ? (as_bool() ? 1 : 0) : as_int(); }
  double FloatValue() const { return is_float() ? as_float() : static_cast<double>(IntValue()); }

  bool Truthy() const;
  // Python's str(): strings as-is, Undefined as "", None as "None", containers as repr.
  std::string Str() const;
  // Python's repr(): strings quoted.
  std::string Repr() const;
  // Jinja2's object_type_repr for error messages: "'dict object'", "'None'", ...
  std::string TypeRepr() const;
  // Python's type name ("str", "int", "list", "dict", "NoneType", ...).
  std::string TypeName() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, std::string, ListPtr, DictPtr, CallablePtr,
               ObjectPtr>
      v_;
};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;  // Python tuple: prints as (a, b) and never equals a list
  int depth = 1;          // 1 + the deepest item's NestingDepth (set by Value::MakeList)
};

// A dict with string keys in insertion order (Python dicts keep order; tojson must too).
class Dict {
 public:
  const Value* Find(std::string_view key) const;
  void Set(std::string key, Value value);  // replaces an existing key in place
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  int depth() const { return depth_; }  // 1 + the deepest value's NestingDepth

 private:
  friend class Value;  // MakeDict sets depth_
  std::vector<std::pair<std::string, Value>> entries_;
  int depth_ = 1;
  std::unordered_map<std::string, size_t> index_;  // built once the dict grows past a few keys
};

// Arguments of a call: positional then keyword, as written.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Anything callable from a template: builtins, bound string/dict methods, macros, caller().
struct Callable {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

// Objects with attributes: namespace(), loop, cycler(), joiner().
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string TypeName() const = 0;
  // Returns false when the object has no such attribute.
  virtual bool GetAttr(std::string_view name, Value* out) const = 0;
  // Only namespaces accept `{% set obj.attr = ... %}`.
  virtual bool SetAttr(const std::string& name, const Value& value);
  virtual std::string Str() const;
  // Callable objects (a recursive loop) override this.
  virtual bool IsCallable() const { return false; }
  // Drops references to other values at the end of a render (a namespace may hold itself).
  virtual void BreakCycles() {}
  virtual Value Call(Interpreter& interp, CallArgs& args);
};

// How deep containers nest in `v`: 0 for a scalar, 1 for a list or dict of scalars. Building one
// deeper than kMaxValueDepth is an error (EvalFailure kLimit).
inline constexpr int kMaxValueDepth = 512;
int NestingDepth(const Value& v);

// Python ==, with 1 == 1.0 == True, element-wise containers, tuple != list.
bool Equals(const Value& a, const Value& b);

// Python's repr of a float (shortest round trip, "1.0", "1e+16", "inf", "nan").
std::string FloatRepr(double value);
// Python's repr of a string ('abc', "it's", with escapes).
std::string StringRepr(std::string_view s);

// JSON (nlohmann, key order kept) to Value: objects -> Dict, arrays -> List. Nesting deeper than
// kMaxJsonDepth is an error (the conversion and the values it builds are recursive).
inline constexpr int kMaxJsonDepth = 256;
Value FromJson(const nlohmann::ordered_json& json);

// Python's json.dumps as transformers' tojson calls it (ensure_ascii=False by default).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // the text of one level (indent=4 -> four spaces)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
// Throws the message Python's json module gives for values it cannot serialize.
std::string DumpJson(const Value& value, const JsonDumpOptions& options);

}  // namespace proctor::jinja
