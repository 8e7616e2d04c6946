#include "text/punkt.h"

#include <cstdlib>

#include "text/python_str.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/file.h"
#include "util/utf8.h"

namespace proctor::text {
namespace {

// Orthographic context flags (nltk's _ORTHO_*).
constexpr int kBegUc = 1 << 1;
constexpr int kMidUc = 1 << 2;
constexpr int kUnkUc = 1 << 3;
constexpr int kBegLc = 1 << 4;
constexpr int kMidLc = 1 << 5;
constexpr int kUnkLc = 1 << 6;
constexpr int kUc = kBegUc + kMidUc + kUnkUc;
constexpr int kLc = kBegLc + kMidLc + kUnkLc;

// One punkt_tab file as nltk's TabDecoder reads it: its lines without their "\n" ("\r\n" too:
// Python reads text files with universal newlines).
std::vector<std::string> ReadLines(const std::filesystem::path& file) {
  std::string content =
      PythonReplace(PythonReplace(ReadFileToString(file), "\r\n", "\n"), "\r", "\n");
  std::vector<std::string> lines;
  if (content.empty()) return lines;
  if (content.back() == '\n') content.pop_back();
  for (std::string_view line : PythonSplit(content, "\n")) lines.emplace_back(line);
  return lines;
}

std::pair<std::string, std::string> TabPair(const std::string& line,
                                            const std::filesystem::path& file, size_t index) {
  const std::vector<std::string_view> fields = PythonSplit(line, "\t");
  if (fields.size() != 2) {
    Fail("punkt", "{} line {}: expected two tab-separated fields, got {}: '{}'", file.string(),
         index + 1, fields.size(), line);
  }
  return {std::string(fields[0]), std::string(fields[1])};
}

// tok[0].isupper() / tok[0].islower().
bool FirstCharIs(std::string_view s, bool upper) {
  if (s.empty()) return false;
  size_t pos = 0;
  const char32_t first = DecodeUtf8(s, &pos, InvalidByte::kFlagged);
  return upper ? IsPythonUpper(first) : IsPythonLower(first);
}

}  // namespace

PunktParameters ReadPunktTab(const std::filesystem::path& dir) {
  PunktParameters params;
  for (const std::string& line : ReadLines(dir / "abbrev_types.txt")) {
    params.abbrev_types.insert(line);
  }
  for (const std::string& line : ReadLines(dir / "sent_starters.txt")) {
    params.sent_starters.insert(line);
  }
  const std::filesystem::path collocations = dir / "collocations.tab";
  const std::vector<std::string> pairs = ReadLines(collocations);
  for (size_t i = 0; i < pairs.size(); ++i) {
    params.collocations.insert(TabPair(pairs[i], collocations, i));
  }
  const std::filesystem::path ortho = dir / "ortho_context.tab";
  const std::vector<std::string> contexts = ReadLines(ortho);
  for (size_t i = 0; i < contexts.size(); ++i) {
    const auto [type, flags] = TabPair(contexts[i], ortho, i);
    char* end = nullptr;
    const long value = std::strtol(flags.c_str(), &end, 10);
    if (flags.empty() || *end != '\0') {
      Fail("punkt", "{} line {}: '{}' is not an integer", ortho.string(), i + 1, flags);
    }
    params.ortho_context[type] = static_cast<int>(value);
  }
  return params;
}

std::optional<std::filesystem::path> FindPunktTab(const std::string& language,
                                                  std::vector<std::filesystem::path>* searched) {
  std::vector<std::filesystem::path> roots;
  if (const char* env = std::getenv("NLTK_DATA")) {
    for (std::string_view dir : PythonSplit(env, ":")) {
      if (!dir.empty()) roots.emplace_back(dir);
    }
  }
  if (const char* home = std::getenv("HOME"))
    roots.push_back(std::filesystem::path(home) / "nltk_data");
  for (const char* dir : {"/usr/share/nltk_data", "/usr/local/share/nltk_data",
                          "/usr/lib/nltk_data", "/usr/local/lib/nltk_data", "/usr/nltk_data"}) {
    roots.emplace_back(dir);
  }
  for (const std::filesystem::path& root : roots) {
    const std::filesystem::path dir = root / "tokenizers" / "punkt_tab" / language;
    if (searched) searched->push_back(dir);
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "abbrev_types.txt", ec)) return dir;
  }
  return std::nullopt;
}

// One word token of Punkt with its annotations (nltk's PunktToken).
struct PunktSentenceTokenizer::Token {
  std::string tok;
  std::string type;  // lowercased, or "##number##"
  bool period_final = false;
  bool sentbreak = false;
  bool abbr = false;
  bool ellipsis = false;

  std::string TypeNoPeriod() const {
    if (type.size() > 1 && type.back() == '.') return type.substr(0, type.size() - 1);
    return type;
  }
  std::string TypeNoSentPeriod() const { return sentbreak ? TypeNoPeriod() : type; }
  bool FirstUpper() const { return FirstCharIs(tok, true); }
  bool FirstLower() const { return FirstCharIs(tok, false); }
};

// nltk's PunktLanguageVars for English, with Python's \s spelled out.
struct PunktSentenceTokenizer::Patterns {
  Regex word;            // _word_tokenizer_re
  Regex period_context;  // period_context_re: group 1 after_tok, group 2 next_tok
  Regex numeric;         // PunktToken._RE_NUMERIC
  Regex initial;         // _RE_INITIAL
  Regex boundary_realignment;

  static std::string NonSpace() { return std::string("[^") + (kPythonSpaceClass + 1); }
  static std::string NonWord() {
    return "(?:[)\";}\\]\\*:@'\\({\\[\\x{2018}\\x{2019}\\x{201c}\\x{201d}\\x{ab}\\x{bb}?!])";
  }
  static std::string MultiChar() {
    return std::string("(?:\\-{2,}|\\.{2,}|(?:\\.") + kPythonSpaceClass + "){2,}\\.)";
  }

  Patterns()
      : word("(?:" + MultiChar() + "|(?=[^\\(\"`{\\[:;&\\#\\*@\\)}\\]\\-,])" + NonSpace() +
             "+?(?=" + kPythonSpaceClass + "|$|" + NonWord() + "|" + MultiChar() + "|,(?=$|" +
             kPythonSpaceClass + "|" + NonWord() + "|" + MultiChar() + "))|" + NonSpace() + ")"),
        period_context("[\\.\\?\\!](?=(" + NonWord() + "|" + kPythonSpaceClass + "+(" + NonSpace() +
                       "+)))"),
        numeric("^-?[\\.,]?\\d[\\d,\\.-]*\\.?$"),
        initial("^[^\\W\\d]\\.$"),
        boundary_realignment("[\"')\\]}\\x{2018}\\x{2019}\\x{201c}\\x{201d}\\x{ab}\\x{bb}]+?(?:" +
                                 std::string(kPythonSpaceClass) + "+|(?=--)|$)",
                             {.multiline = true}) {}
};

PunktSentenceTokenizer::PunktSentenceTokenizer(PunktParameters params)
    : params_(std::move(params)), patterns_(std::make_unique<Patterns>()) {}

PunktSentenceTokenizer::~PunktSentenceTokenizer() = default;

int PunktSentenceTokenizer::OrthoContext(const std::string& type) const {
  const auto it = params_.ortho_context.find(type);
  return it == params_.ortho_context.end() ? 0 : it->second;
}

// _tokenize_words: each non-blank line through the word pattern.
std::vector<PunktSentenceTokenizer::Token> PunktSentenceTokenizer::WordTokens(
    std::string_view text) const {
  std::vector<Token> tokens;
  std::vector<std::pair<size_t, size_t>> spans;
  for (std::string_view line : PythonSplit(text, "\n")) {
    if (PythonStrip(line).empty()) continue;
    patterns_->word.FindAll(line, spans);
    for (const auto& [begin, end] : spans) {
      Token token;
      token.tok = std::string(line.substr(begin, end - begin));
      const std::string lower = Lowercase(token.tok);
      token.type = patterns_->numeric.Search(lower) ? "##number##" : lower;
      token.period_final = token.tok.back() == '.';
      tokens.push_back(std::move(token));
    }
  }
  return tokens;
}

// _first_pass_annotation: sentence-final punctuation, ellipses, known abbreviations.
void PunktSentenceTokenizer::FirstPass(Token& token) const {
  const std::string& tok = token.tok;
  if (tok == "." || tok == "?" || tok == "!") {
    token.sentbreak = true;
  } else if (tok.size() >= 2 && tok.find_first_not_of('.') == std::string::npos) {
    token.ellipsis = true;
  } else if (token.period_final &&
             !(tok.size() >= 2 && tok.compare(tok.size() - 2, 2, "..") == 0)) {
    const std::string stem = Lowercase(std::string_view(tok).substr(0, tok.size() - 1));
    const size_t dash = stem.rfind('-');
    const std::string last_part = dash == std::string::npos ? stem : stem.substr(dash + 1);
    if (params_.abbrev_types.count(stem) || params_.abbrev_types.count(last_part)) {
      token.abbr = true;
    } else {
      token.sentbreak = true;
    }
  }
}

int PunktSentenceTokenizer::OrthoHeuristic(const Token& token) const {
  const std::string& tok = token.tok;
  if (tok == ";" || tok == ":" || tok == "," || tok == "." || tok == "!" || tok == "?") return 0;
  const int context = OrthoContext(token.TypeNoSentPeriod());
  if (token.FirstUpper() && (context & kLc) && !(context & kMidUc)) return 1;
  if (token.FirstLower() && ((context & kUc) || !(context & kBegLc))) return 0;
  return -1;
}

// _second_pass_annotation: collocations, abbreviations before a sentence starter, initials and
// numbers, decided by the orthographic heuristic.
void PunktSentenceTokenizer::SecondPass(Token& token, const Token* next) const {
  if (!next || !token.period_final) return;
  const std::string type = token.TypeNoPeriod();
  const std::string next_type = next->TypeNoSentPeriod();
  const bool is_initial = patterns_->initial.Search(token.tok);
  if (params_.collocations.count({type, next_type})) {
    token.sentbreak = false;
    token.abbr = true;
    return;
  }
  if ((token.abbr || token.ellipsis) && !is_initial) {
    if (OrthoHeuristic(*next) == 1) {
      token.sentbreak = true;
      return;
    }
    if (next->FirstUpper() && params_.sent_starters.count(next_type)) {
      token.sentbreak = true;
      return;
    }
  }
  if (is_initial || type == "##number##") {
    const int starter = OrthoHeuristic(*next);
    if (starter == 0) {
      token.sentbreak = false;
      token.abbr = true;
      return;
    }
    if (starter == -1 && is_initial && next->FirstUpper() && !(OrthoContext(next_type) & kLc)) {
      token.sentbreak = false;
      token.abbr = true;
    }
  }
}

// text_contains_sentbreak: a sentence break followed by another token.
bool PunktSentenceTokenizer::ContainsSentenceBreak(std::string_view text) const {
  std::vector<Token> tokens = WordTokens(text);
  for (Token& token : tokens) FirstPass(token);
  bool found = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    SecondPass(tokens[i], i + 1 < tokens.size() ? &tokens[i + 1] : nullptr);
    if (found) return true;
    if (tokens[i].sentbreak) found = true;
  }
  return false;
}

std::vector<std::string_view> PunktSentenceTokenizer::Sentences(std::string_view text) const {
  constexpr size_t kNpos = std::string_view::npos;
  using Slice = std::pair<size_t, size_t>;
  auto cut = [&](Slice s) {
    return s.first < s.second ? text.substr(s.first, s.second - s.first) : std::string_view();
  };
  // _match_potential_end_contexts and _slices_from_text.
  std::vector<Slice> slices;
  size_t last_break = 0;
  std::optional<Regex::Groups> previous_match;
  Slice previous_slice{0, 0};
  auto consider = [&](const Regex::Groups& match, Slice word) {
    const std::string context =
        std::string(cut(word)) + std::string(cut(match[0])) + std::string(cut(match[1]));
    if (!ContainsSentenceBreak(context)) return;
    slices.emplace_back(last_break, match[0].second);
    last_break = match[2].first != kNpos ? match[2].first : match[0].second;
  };
  size_t search = 0;
  while (search < text.size()) {
    const std::optional<Regex::Groups> match = patterns_->period_context.Find(text, search);
    if (!match) break;
    const size_t start = (*match)[0].first;
    const std::string_view before =
        previous_slice.second < start
            ? text.substr(previous_slice.second, start - previous_slice.second)
            : std::string_view();
    size_t after_space = before.find_last_of(" \t\n\r\x0b\x0c");
    if (after_space == std::string_view::npos) after_space = 0;  // nltk's index 0 means "none"
    after_space = after_space ? after_space + previous_slice.second + 1 : previous_slice.first;
    const Slice word{after_space, start};
    if (previous_match && previous_slice.second <= word.first)
      consider(*previous_match, previous_slice);
    previous_match = match;
    previous_slice = word;
    search = (*match)[0].second;
  }
  if (previous_match) consider(*previous_match, previous_slice);
  slices.emplace_back(last_break, PythonRStrip(text).size());

  // _realign_boundaries: closing quotes and brackets after the break join the sentence.
  std::vector<std::string_view> sentences;
  size_t realign = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice first{slices[i].first + realign, slices[i].second};
    if (i + 1 == slices.size()) {
      if (!cut(first).empty()) sentences.push_back(cut(first));
      continue;
    }
    const Slice second = slices[i + 1];
    const std::string_view next = cut(second);
    const std::optional<Regex::Groups> m = patterns_->boundary_realignment.Find(next, 0, true);
    if (m) {
      const std::string_view matched = next.substr(0, (*m)[0].second);
      sentences.push_back(cut({first.first, second.first + PythonRStrip(matched).size()}));
      realign = (*m)[0].second;
    } else {
      realign = 0;
      if (!cut(first).empty()) sentences.push_back(cut(first));
    }
  }
  return sentences;
}

}  // namespace proctor::text
