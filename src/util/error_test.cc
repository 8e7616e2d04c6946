#include "util/error.h"

#include <gtest/gtest.h>

namespace proctor {
namespace {

TEST(EscapeControlCharacters, TerminalControlBecomesVisible) {
  EXPECT_EQ(EscapeControlCharacters("tensor '\x1b[31mred\x1b[0m'"),
            "tensor '\\x1b[31mred\\x1b[0m'");
  EXPECT_EQ(EscapeControlCharacters("a\rb\x7f\x01"), "a\\x0db\\x7f\\x01");
  // Line breaks, tabs and UTF-8 text stay as they are.
  EXPECT_EQ(EscapeControlCharacters("line\n\ttab café 日本"), "line\n\ttab café 日本");
}

}  // namespace
}  // namespace proctor
