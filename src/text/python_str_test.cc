// Python's str semantics on hand-worked values (each as CPython 3.11 gives it).
#include "text/python_str.h"

#include <gtest/gtest.h>

#include "text/tokenizer/regex.h"

namespace proctor::text {
namespace {

using V = std::vector<std::string_view>;

TEST(PythonStr, StripSplitAndCase) {
  // " \x1c" and U+3000 are str.isspace(); U+200B (zero width space) is not.
  EXPECT_EQ(PythonStrip(" \x1c\u3000a b\u00a0\n"), "a b");
  EXPECT_EQ(PythonStrip("\u200ba\u200b"), "\u200ba\u200b");
  EXPECT_EQ(PythonStrip(""), "");
  EXPECT_EQ(PythonStrip("\"\"x\"", "\""), "x");
  EXPECT_EQ(PythonLStrip("<<t>>", "<"), "t>>");
  EXPECT_EQ(PythonRStrip("<<t>>", ">"), "<<t");
  EXPECT_EQ(PythonSplitWhitespace("  a\tb\u2003c  "), (V{"a", "b", "c"}));
  EXPECT_EQ(PythonSplitWhitespace(" \n "), V{});
  EXPECT_EQ(PythonSplit("a**b****", "**"), (V{"a", "b", "", ""}));
  EXPECT_EQ(PythonSplit("*******", "******"), (V{"", "*"}));
  EXPECT_EQ(PythonReplace("*a**b", "*", ""), "ab");
  EXPECT_TRUE(PythonIsUpper("HELLO, WORLD 42"));
  EXPECT_FALSE(PythonIsUpper("HELLo"));
  EXPECT_FALSE(PythonIsUpper("42 !"));    // no cased character
  EXPECT_TRUE(PythonIsUpper("ÉCOLE Ⅻ"));  // Ⅻ (U+216B) is Other_Uppercase
  EXPECT_FALSE(PythonIsUpper("Aª"));      // ª (U+00AA) is Other_Lowercase
  EXPECT_TRUE(PythonIsLower("école ⅻ 1"));
  EXPECT_FALSE(PythonIsLower("ǅ"));  // titlecase
  EXPECT_EQ(PythonLength("añ日🦙"), 4u);
  EXPECT_EQ(PythonRStrip(" a b\u3000\n"), " a b");
  EXPECT_TRUE(IsPythonUpper(U'\u216B'));   // 'Ⅻ'.isupper()
  EXPECT_TRUE(IsPythonLower(U'\u00AA'));   // 'ª'.islower()
  EXPECT_FALSE(IsPythonUpper(U'\u01C5'));  // 'ǅ' is titlecase
  EXPECT_FALSE(IsPythonLower(U'1'));
}

TEST(PythonStr, PatternsKeepPythonsWhitespace) {
  const Regex space(PythonPatternForPcre2("a\\sb"));
  EXPECT_TRUE(
      space.Search("a\x1c"
                   "b"));  // Python's \s has \x1c; PCRE2's has not
  EXPECT_FALSE(
      space.Search("a\u180e"
                   "b"));  // PCRE2's \s has U+180E; Python's has not
  const Regex in_class(PythonPatternForPcre2("[^\\s]+"));
  EXPECT_EQ(in_class.Count("ab\x1c"
                           "cd"),
            2u);
  const Regex non_space(PythonPatternForPcre2("\\S+"));
  EXPECT_EQ(non_space.Count("ab\x1c"
                            "cd"),
            2u);
  EXPECT_EQ(PythonPatternForPcre2("[]\\s]"),
            std::string("[]") + std::string(kPythonSpaceClass).substr(1));
}

TEST(Regex, FindGroupsSplitAndReplace) {
  const Regex r("([a-z])(\\d)?");
  const std::optional<Regex::Groups> m = r.Find("12a3b", 0);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)[0], std::make_pair(size_t{2}, size_t{4}));
  EXPECT_EQ((*m)[2], std::make_pair(size_t{3}, size_t{4}));
  const std::optional<Regex::Groups> b = r.Find("12a3b", 4);
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[2].first, std::string_view::npos);  // the group did not take part
  EXPECT_FALSE(r.Find("12a3b", 0, /*anchored=*/true));
  EXPECT_EQ(r.Replace("a1 b", "<$1|$2>"), "<a|1> <b|>");  // an unset group is empty
  EXPECT_EQ(Regex("x").Split("axbxx"), (V{"a", "b", "", ""}));
  EXPECT_TRUE(Regex("^b$", {.multiline = true}).Search("a\nb\nc"));
  EXPECT_FALSE(Regex("^b$").Search("a\nb\nc"));
  EXPECT_TRUE(Regex("stra\u00dfe", {.ignore_case = true}).Search("STRA\u00dfE"));
  EXPECT_FALSE(Regex("a.b").Search("a\nb"));  // "." stops at "\n"
}

}  // namespace
}  // namespace proctor::text
