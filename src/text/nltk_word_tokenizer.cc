#include "text/nltk_word_tokenizer.h"

#include <memory>
#include <utility>

#include "text/punkt.h"
#include "text/python_str.h"
#include "text/tokenizer/regex.h"

namespace proctor::text {
namespace {

struct Rule {
  std::unique_ptr<Regex> pattern;
  std::string replacement;  // $N for Python's \N and \g<N>
};

Rule MakeRule(const std::string& pattern, std::string replacement) {
  return {std::make_unique<Regex>(pattern), std::move(replacement)};
}

// NLTKWordTokenizer's rule lists, in its order: STARTING_QUOTES, PUNCTUATION, PARENS_BRACKETS,
// DOUBLE_DASHES; then (on " " + text + " ") ENDING_QUOTES, CONTRACTIONS2 and CONTRACTIONS3.
// Python's \s is spelled out (kPythonSpaceClass).
struct Rules {
  std::vector<Rule> before_padding;
  std::vector<Rule> after_padding;

  Rules() {
    const std::string s = kPythonSpaceClass;
    auto& a = before_padding;
    a.push_back(MakeRule("([\\x{ab}\\x{201c}\\x{2018}\\x{201e}]|[`]+)", " $1 "));
    a.push_back(MakeRule("^\"", "``"));
    a.push_back(MakeRule("(``)", " $1 "));
    a.push_back(MakeRule("([ \\(\\[{<])(\"|'{2})", "$1 `` "));
    a.push_back(MakeRule("(?i)(?<!\\w)(')(?!(?:re|ve|ll|m|t|s|d|n)\\b)(?=\\w)", "$1 "));
    // PUNCTUATION
    a.push_back(MakeRule("([^\\.])(\\.)([\\]\\)}>\"'\\x{bb}\\x{201d}\\x{2019} ]*+)" + s + "*$",
                         "$1 $2 $3 "));
    a.push_back(MakeRule("([:,])([^\\d])", " $1 $2"));
    a.push_back(MakeRule("([:,])$", " $1 "));
    a.push_back(MakeRule("\\.{2,}", " $0 "));
    a.push_back(MakeRule("[;@#$%&]", " $0 "));
    a.push_back(MakeRule("[\\x{2012}-\\x{2015}]", " $0 "));
    a.push_back(MakeRule("([^\\.])(\\.)([\\]\\)}>\"']*)" + s + "*$", "$1 $2$3 "));
    a.push_back(MakeRule("[?!]", " $0 "));
    a.push_back(MakeRule("([^'])' ", "$1 ' "));
    a.push_back(MakeRule("[*]", " $0 "));
    a.push_back(MakeRule("[\\]\\[\\(\\)\\{\\}\\<\\>]", " $0 "));  // PARENS_BRACKETS
    a.push_back(MakeRule("--", " -- "));                          // DOUBLE_DASHES

    auto& b = after_padding;
    b.push_back(MakeRule("([\\x{bb}\\x{201d}\\x{2019}])", " $1 "));
    b.push_back(MakeRule("''", " '' "));
    b.push_back(MakeRule("\"", " '' "));
    b.push_back(MakeRule(s + "+", " "));
    b.push_back(MakeRule("([^' ])('[sS]|'[mM]|'[dD]|') ", "$1 $2 "));
    b.push_back(MakeRule("([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", "$1 $2 "));
    for (const char* contraction :
         {"(?i)\\b(can)(?#X)(not)\\b", "(?i)\\b(d)(?#X)('ye)\\b", "(?i)\\b(gim)(?#X)(me)\\b",
          "(?i)\\b(gon)(?#X)(na)\\b", "(?i)\\b(got)(?#X)(ta)\\b", "(?i)\\b(lem)(?#X)(me)\\b",
          "(?i)\\b(more)(?#X)('n)\\b", "(?i)\\b(wan)(?#X)(na)(?=\\s)", "(?i) ('t)(?#X)(is)\\b",
          "(?i) ('t)(?#X)(was)\\b"}) {
      std::string pattern = contraction;
      // (?=\s) in "wanna" is Python's whitespace too.
      const size_t at = pattern.find("(?=\\s)");
      if (at != std::string::npos) pattern.replace(at, 6, "(?=" + s + ")");
      b.push_back(MakeRule(pattern, " $1 $2 "));
    }
  }
};

const Rules& TheRules() {
  static const Rules rules;
  return rules;
}

}  // namespace

std::vector<std::string> NltkTreebankTokenize(std::string_view sentence) {
  const Rules& rules = TheRules();
  std::string text(sentence);
  for (const Rule& rule : rules.before_padding)
    text = rule.pattern->Replace(text, rule.replacement);
  text = " " + text + " ";
  for (const Rule& rule : rules.after_padding) text = rule.pattern->Replace(text, rule.replacement);
  std::vector<std::string> tokens;
  for (std::string_view token : PythonSplitWhitespace(text)) tokens.emplace_back(token);
  return tokens;
}

std::vector<std::string> NltkWordTokenize(std::string_view text,
                                          const PunktSentenceTokenizer& punkt) {
  std::vector<std::string> tokens;
  for (std::string_view sentence : punkt.Sentences(text)) {
    for (std::string& token : NltkTreebankTokenize(sentence)) tokens.push_back(std::move(token));
  }
  return tokens;
}

}  // namespace proctor::text
