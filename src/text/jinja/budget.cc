// The render budget (budget.h): the bound on one value, the running sum, the active render.
#include "text/jinja/budget.h"

#include <fmt/format.h>

#include <utility>

#include "text/jinja/errors.h"
#include "text/jinja/template.h"
#include "text/jinja/value.h"

namespace proctor::jinja {
namespace {

thread_local RenderBudget* active_budget = nullptr;

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits)
    : max_value_bytes_(limits.max_value_bytes),
      max_built_bytes_(limits.max_built_bytes),
      max_seconds_(limits.max_render_seconds) {}

void RenderBudget::CheckTime() const {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
  if (elapsed.count() > max_seconds_) {
    ThrowEval(
        ErrorKind::kLimit,
        fmt::format("the template ran longer than {} s (the bound on one render)", max_seconds_));
  }
}

void RenderBudget::CheckValue(uint64_t bytes, std::string_view what) const {
  if (bytes > max_value_bytes_) {
    ThrowEval(ErrorKind::kLimit,
              fmt::format("{} would hold {} bytes, more than the {} a template may build in one "
                          "value",
                          what, bytes, max_value_bytes_));
  }
}

void RenderBudget::Charge(const Value& built) {
  CheckTime();
  const uint64_t bytes = BytesOf(built);
  if (bytes == 0) return;
  CheckValue(bytes, fmt::format("a {}", built.TypeName()));
  built_bytes_ += bytes;
  if (built_bytes_ > max_built_bytes_) {
    ThrowEval(ErrorKind::kLimit,
              fmt::format("the template built more than {} bytes of strings and lists in all (a "
                          "loop that builds large values, or rebuilds a growing one)",
                          max_built_bytes_));
  }
}

RenderBudget::Scope::Scope(RenderBudget* budget)
    : previous_(std::exchange(active_budget, budget)) {}
RenderBudget::Scope::~Scope() { active_budget = previous_; }

uint64_t BytesOf(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return v.str().size();
    case Value::Kind::kList: {
      // Strings are held by value: a list's copy copies its strings (nested lists are shared).
      uint64_t bytes = v.list().items.size() * sizeof(Value);
      for (const Value& item : v.list().items) {
        if (item.is_string()) bytes += item.str().size();
      }
      return bytes;
    }
    case Value::Kind::kDict: {
      uint64_t bytes = v.dict().size() * sizeof(std::pair<std::string, Value>);
      for (const auto& [key, item] : v.dict().entries()) {
        bytes += key.size() + (item.is_string() ? item.str().size() : 0);
      }
      return bytes;
    }
    default:
      return 0;
  }
}

uint64_t SaturatingBytes(uint64_t count, uint64_t each) {
  uint64_t bytes;
  return __builtin_mul_overflow(count, each, &bytes) ? UINT64_MAX : bytes;
}

void CheckValueSize(uint64_t bytes, std::string_view what) {
  if (active_budget != nullptr) active_budget->CheckValue(bytes, what);
}

}  // namespace proctor::jinja
