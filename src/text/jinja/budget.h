// What one render may build and how long it may run (RenderLimits): no single string, list or
// dict larger than max_value_bytes, no more than max_built_bytes summed over every value the
// render builds, and no longer than max_render_seconds. The first bounds memory; the second
// bounds the work of a loop that rebuilds a growing string or list (`{% set ns.s = ns.s ~ x %}`
// is quadratic in bytes long before it is in iterations), quickly and deterministically; the
// third bounds work that builds nothing (scanning a large string in a long loop).
//
// The render in progress installs its budget (RenderBudget::Scope) for the thread it runs on, so
// every builder (filters, methods, operators, repr, tojson) checks a size it is about to make
// with CheckValueSize, however deep in the library it sits. Outside a render nothing is checked.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

namespace proctor::jinja {

class Value;
struct RenderLimits;

class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits);

  // Throws EvalFailure(kLimit) when a value of `bytes` would exceed the single-value bound.
  void CheckValue(uint64_t bytes, std::string_view what) const;
  // Counts a value the render built (its bytes as BytesOf measures them) against the bounds.
  void Charge(const Value& built);
  // Throws EvalFailure(kLimit) once the render has run longer than max_render_seconds (the
  // interpreter calls it for every loop iteration and macro call, and Charge does).
  void CheckTime() const;

  // Makes `budget` the one CheckValueSize consults on this thread until destroyed.
  class Scope {
   public:
    explicit Scope(RenderBudget* budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderBudget* previous_;
  };

 private:
  uint64_t max_value_bytes_;
  uint64_t max_built_bytes_;
  uint64_t built_bytes_ = 0;
  double max_seconds_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The bytes a value holds for the budget: a string's length; a list's or dict's slots and the
// strings in them (held by value, so copied with the container). Nested lists and dicts are
// shared, not copied, and not counted again.
uint64_t BytesOf(const Value& v);

// count x each, saturating at UINT64_MAX (a repetition count can be 2^62).
uint64_t SaturatingBytes(uint64_t count, uint64_t each);

// Checks `bytes` against the budget of the render running on this thread (none: no check).
void CheckValueSize(uint64_t bytes, std::string_view what);

}  // namespace proctor::jinja
