// nltk's Punkt sentence splitter (nltk.tokenize.punkt.PunktSentenceTokenizer, nltk 3.10): the
// tokenizing half only, with parameters read from nltk's punkt_tab files. IFEval counts sentences
// with it (lm-eval's count_sentences and, through nltk.word_tokenize, its capital-word count).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proctor::text {

class Regex;

// What Punkt learned from a corpus (nltk's PunktParameters): abbreviation types ("dr", "e.g"),
// collocations whose first word ends in a period, frequent sentence starters, and for each word
// type the orthographic contexts it was seen in (a bit set). Empty parameters are nltk's
// untrained PunktSentenceTokenizer().
struct PunktParameters {
  std::set<std::string> abbrev_types;
  std::set<std::pair<std::string, std::string>> collocations;
  std::set<std::string> sent_starters;
  std::map<std::string, int> ortho_context;
};

// DIR/abbrev_types.txt, collocations.tab, sent_starters.txt and ortho_context.tab, as nltk's
// load_punkt_params reads them (one entry per line; tab-separated pairs). Error naming the file
// and line when one is missing or malformed.
PunktParameters ReadPunktTab(const std::filesystem::path& dir);

// Where nltk would find punkt_tab/english: $NLTK_DATA's directories, then ~/nltk_data and the
// system locations nltk searches (/usr/share, /usr/local/share, /usr/lib, /usr/local/lib,
// /usr/nltk_data...). nullopt when none has it; `searched` (when given) receives the list.
std::optional<std::filesystem::path> FindPunktTab(
    const std::string& language, std::vector<std::filesystem::path>* searched = nullptr);

class PunktSentenceTokenizer {
 public:
  explicit PunktSentenceTokenizer(PunktParameters params);
  ~PunktSentenceTokenizer();
  PunktSentenceTokenizer(const PunktSentenceTokenizer&) = delete;
  PunktSentenceTokenizer& operator=(const PunktSentenceTokenizer&) = delete;

  // The sentences of `text` (tokenize() with realigned boundaries), as views into it.
  std::vector<std::string_view> Sentences(std::string_view text) const;

 private:
  struct Token;
  struct Patterns;
  std::vector<Token> WordTokens(std::string_view text) const;
  void FirstPass(Token& token) const;
  void SecondPass(Token& token, const Token* next) const;
  int OrthoHeuristic(const Token& token) const;  // 1 sentence starter, 0 not, -1 unknown
  bool ContainsSentenceBreak(std::string_view text) const;
  int OrthoContext(const std::string& type) const;

  PunktParameters params_;
  std::unique_ptr<Patterns> patterns_;
};

}  // namespace proctor::text
