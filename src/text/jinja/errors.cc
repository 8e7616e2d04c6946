#include "text/jinja/errors.h"

#include <fmt/format.h>

namespace proctor::jinja {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntax:
      return "syntax error";
    case ErrorKind::kRaised:
      return "raised by the template";
    case ErrorKind::kUndefined:
      return "undefined value";
    case ErrorKind::kType:
      return "type error";
    case ErrorKind::kSecurity:
      return "refused by the sandbox";
    case ErrorKind::kLimit:
      return "limit exceeded";
  }
  return "error";
}

TemplateError::TemplateError(ErrorKind kind, const std::string& template_name, int line,
                             const std::string& message)
    : proctor::Error("jinja", fmt::format("{}:{}: {} ({})", template_name, line, message,
                                          ErrorKindName(kind))),
      kind_(kind),
      line_(line),
      message_(message) {}

}  // namespace proctor::jinja
