// Parser: tokens -> statement tree, following Jinja2's grammar and operator precedence
// (or < and < not < comparisons < + - < ~ < * / // % < ** < unary - + < filters, tests, calls).
// Unknown tags, filters and tests are syntax errors at parse time, as in Jinja2.
#pragma once

#include <string>
#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace proctor::jinja {

// Throws TemplateError(kSyntax) naming the template line.
Body Parse(const std::vector<Token>& tokens, const std::string& template_name);

}  // namespace proctor::jinja
