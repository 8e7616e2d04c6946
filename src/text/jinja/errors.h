// Errors of the Jinja interpreter: every failure carries the template name and line.
//
// Code below the interpreter (values, filters, methods) throws EvalFailure without a line; the
// interpreter adds the line of the expression or statement being evaluated and rethrows a
// TemplateError, which is a proctor::Error ("[jinja] name:line: message").
#pragma once

#include <string>

#include "util/error.h"

namespace proctor::jinja {

enum class ErrorKind {
  kSyntax,     // TemplateSyntaxError / TemplateAssertionError (unknown filter or test)
  kRaised,     // raise_exception(message) called by the template
  kUndefined,  // an undefined value was used (UndefinedError)
  kType,       // wrong operand or argument types (TypeError, ValueError)
  kSecurity,   // the sandbox refused (SecurityError: list.append, ...)
  kLimit,      // a bound on loops, recursion or output size was hit
};

const char* ErrorKindName(ErrorKind kind);

class TemplateError : public proctor::Error {
 public:
  TemplateError(ErrorKind kind, const std::string& template_name, int line,
                const std::string& message);
  ErrorKind kind() const { return kind_; }
  int line() const { return line_; }
  // The message alone, as Jinja2 would raise it (e.g. raise_exception's argument).
  const std::string& message() const { return message_; }

 private:
  ErrorKind kind_;
  int line_;
  std::string message_;
};

// Thrown below the interpreter; carries no line yet.
struct EvalFailure {
  ErrorKind kind;
  std::string message;
};

[[noreturn]] inline void ThrowEval(ErrorKind kind, std::string message) {
  throw EvalFailure{kind, std::move(message)};
}

}  // namespace proctor::jinja
