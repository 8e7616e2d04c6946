#include "eval/tasks/ifeval_instructions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "text/langdetect.h"
#include "text/nltk_word_tokenizer.h"
#include "text/punkt.h"
#include "text/python_str.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/unicode.h"
#include "util/error.h"
#include "util/utf8.h"

namespace proctor {
namespace {

using text::PythonStrip;

// The kwargs of one instruction, read the way lm-eval's build_description takes them: a value
// that is missing or falsy (None, 0, "", []) would make lm-eval draw a random one, so here it is
// an error.
class Kwargs {
 public:
  explicit Kwargs(const IfevalInstruction& instruction) : instruction_(instruction) {}

  int64_t Int(const char* name) const {
    const nlohmann::json& v = Get(name);
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) Bad(name, "a positive integer");
    return v.get<int64_t>();
  }
  std::string String(const char* name) const {
    const nlohmann::json& v = Get(name);
    if (!v.is_string() || v.get<std::string>().empty()) Bad(name, "a non-empty string");
    return v.get<std::string>();
  }
  std::vector<std::string> Strings(const char* name) const {
    const nlohmann::json& v = Get(name);
    if (!v.is_array() || v.empty()) Bad(name, "a non-empty list of strings");
    std::vector<std::string> out;
    for (const nlohmann::json& item : v) {
      if (!item.is_string()) Bad(name, "a non-empty list of strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  // "less than" or "at least" (lm-eval's _COMPARISON_RELATION).
  bool AtLeast(const char* name) const {
    const std::string relation = String(name);
    if (relation != "less than" && relation != "at least") Bad(name, "'less than' or 'at least'");
    return relation == "at least";
  }

 private:
  const nlohmann::json& Get(const char* name) const {
    static const nlohmann::json kNull;
    if (!instruction_.kwargs.is_object() || !instruction_.kwargs.contains(name)) {
      Fail("ifeval", "instruction '{}' needs kwarg '{}' (kwargs: {})", instruction_.id, name,
           instruction_.kwargs.dump());
    }
    const nlohmann::json& v = instruction_.kwargs.at(name);
    return v.is_null() ? kNull : v;
  }
  [[noreturn]] void Bad(const char* name, const char* want) const {
    Fail("ifeval", "instruction '{}': kwarg '{}' must be {} (kwargs: {})", instruction_.id, name,
         want, instruction_.kwargs.dump());
  }
  const IfevalInstruction& instruction_;
};

// A Python pattern compiled once and shared by the check's copies.
std::shared_ptr<const text::Regex> Compile(const std::string& pattern, const std::string& id,
                                           text::RegexOptions options = {}) {
  try {
    return std::make_shared<const text::Regex>(text::PythonPatternForPcre2(pattern), options);
  } catch (const Error& e) {
    Fail("ifeval", "instruction '{}': pattern '{}' does not compile: {}", id, pattern, e.what());
  }
}

bool Compare(int64_t count, bool at_least, int64_t threshold) {
  return at_least ? count >= threshold : count < threshold;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
std::string_view RemovePrefix(std::string_view s, std::string_view prefix) {
  return StartsWith(s, prefix) ? s.substr(prefix.size()) : s;
}
std::string_view RemoveSuffix(std::string_view s, std::string_view suffix) {
  return EndsWith(s, suffix) ? s.substr(0, s.size() - suffix.size()) : s;
}

// Python's json.loads accepting the text: nlohmann's strict parser once the two things Python
// accepts beyond RFC 8259 are rewritten (NaN, Infinity and -Infinity outside strings, and \u
// escapes of unpaired surrogates, which Python keeps as lone code points).
bool PythonJsonLoads(std::string_view text) {
  std::string strict;
  strict.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\' && i + 1 < text.size()) {
        if (text[i + 1] == 'u' && i + 6 <= text.size()) {
          const std::string hex(text.substr(i + 2, 4));
          const bool is_hex = hex.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
          const unsigned value = is_hex ? std::stoul(hex, nullptr, 16) : 0;
          const bool high = value >= 0xD800 && value <= 0xDBFF;
          const bool low = value >= 0xDC00 && value <= 0xDFFF;
          bool paired = false;
          if (high && i + 12 <= text.size() && text.substr(i + 6, 2) == "\\u") {
            const std::string next(text.substr(i + 8, 4));
            if (next.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
              const unsigned v2 = std::stoul(next, nullptr, 16);
              paired = v2 >= 0xDC00 && v2 <= 0xDFFF;
            }
          }
          if (is_hex && ((high && !paired) || low)) {
            strict += "\\uFFFD";
            i += 5;
            continue;
          }
          if (is_hex && paired) {
            strict.append(text.substr(i, 12));
            i += 11;
            continue;
          }
        }
        strict.push_back(c);
        strict.push_back(text[++i]);
        continue;
      }
      if (c == '"') in_string = false;
      strict.push_back(c);
      continue;
    }
    // Where a value may start: after '[', ',' or ':' (whitespace aside), or at the start.
    const size_t last = strict.find_last_not_of(" \t\n\r");
    const bool value_starts = last == std::string::npos ||
                              std::string_view("[,:").find(strict[last]) != std::string_view::npos;
    if (c == '"') {
      in_string = true;
    } else if (value_starts) {
      bool replaced = false;
      for (std::string_view literal : {"NaN", "Infinity", "-Infinity"}) {
        if (text.substr(i, literal.size()) == literal) {
          strict += "0";
          i += literal.size() - 1;
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
    }
    strict.push_back(c);
  }
  return nlohmann::json::accept(strict);
}

using Builder = InstructionCheck (*)(const IfevalInstruction&, const Kwargs&,
                                     const IfevalTools& tools);

// The tool a check runs with; a check built without it (to validate kwargs) fails when run.
const text::PunktSentenceTokenizer& NeedPunkt(const text::PunktSentenceTokenizer* punkt,
                                              const std::string& id) {
  if (!punkt) Fail("ifeval", "instruction '{}' needs the Punkt sentence splitter", id);
  return *punkt;
}
const text::LanguageDetector& NeedDetector(const text::LanguageDetector* detector,
                                           const std::string& id) {
  if (!detector) Fail("ifeval", "instruction '{}' needs langdetect's language detector", id);
  return *detector;
}

// langdetect.detect(value) == language; a text without features (LangDetectException) counts as
// followed, as lm-eval's verifiers do.
bool LanguageIs(const text::LanguageDetector& detector, std::string_view value,
                const std::string& language) {
  const std::optional<std::string> detected = detector.Detect(value);
  return !detected || *detected == language;
}

// lm-eval's INSTRUCTION_DICT: each id with its check_following.
const std::vector<std::pair<std::string, Builder>>& Registry() {
  static const std::vector<std::pair<std::string, Builder>> registry = {
      {"keywords:existence",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         std::vector<std::shared_ptr<const text::Regex>> patterns;
         for (const std::string& keyword : kw.Strings("keywords")) {
           patterns.push_back(Compile(keyword, in.id, {.ignore_case = true}));
         }
         return [patterns](std::string_view value) {
           return std::all_of(patterns.begin(), patterns.end(),
                              [&](const auto& p) { return p->Search(value); });
         };
       }},
      {"keywords:frequency",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto pattern =
             Compile(std::string(PythonStrip(kw.String("keyword"))), in.id, {.ignore_case = true});
         const int64_t frequency = kw.Int("frequency");
         const bool at_least = kw.AtLeast("relation");
         return [=](std::string_view value) {
           return Compare(static_cast<int64_t>(pattern->Count(value)), at_least, frequency);
         };
       }},
      {"keywords:forbidden_words",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         std::vector<std::shared_ptr<const text::Regex>> patterns;
         for (const std::string& word : kw.Strings("forbidden_words")) {
           patterns.push_back(Compile(fmt::format("\\b{}\\b", word), in.id, {.ignore_case = true}));
         }
         return [patterns](std::string_view value) {
           return std::none_of(patterns.begin(), patterns.end(),
                               [&](const auto& p) { return p->Search(value); });
         };
       }},
      {"keywords:letter_frequency",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         // lm-eval replaces anything but one ASCII letter by a random letter; the data names
         // '!' and '#' twice, which proctor counts as the prompt asks (docs/task-evals.md).
         const std::string letter = text::Lowercase(PythonStrip(kw.String("letter")));
         if (text::PythonLength(letter) != 1) {
           Fail("ifeval", "instruction '{}': kwarg 'letter' must be one character, not '{}'", in.id,
                letter);
         }
         const int64_t frequency = kw.Int("let_frequency");
         const bool at_least = kw.AtLeast("let_relation");
         return [=](std::string_view value) {
           const std::string lower = text::Lowercase(value);
           int64_t count = 0;
           for (size_t at = lower.find(letter); at != std::string::npos;
                at = lower.find(letter, at + letter.size())) {
             ++count;
           }
           return Compare(count, at_least, frequency);
         };
       }},
      {"language:response_language",
       [](const IfevalInstruction& in, const Kwargs& kw,
          const IfevalTools& tools) -> InstructionCheck {
         const text::LanguageDetector* detector = tools.language_detector;
         const std::string language = kw.String("language");
         const std::string id = in.id;
         return [=](std::string_view value) {
           return LanguageIs(NeedDetector(detector, id), value, language);
         };
       }},
      {"length_constraints:number_sentences",
       [](const IfevalInstruction& in, const Kwargs& kw,
          const IfevalTools& tools) -> InstructionCheck {
         const text::PunktSentenceTokenizer* punkt = tools.punkt;
         const int64_t threshold = kw.Int("num_sentences");
         const bool at_least = kw.AtLeast("relation");
         const std::string id = in.id;
         return [=](std::string_view value) {
           const size_t sentences = NeedPunkt(punkt, id).Sentences(value).size();
           return Compare(static_cast<int64_t>(sentences), at_least, threshold);
         };
       }},
      {"length_constraints:number_paragraphs",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto divider = Compile("\\s?\\*\\*\\*\\s?", in.id);
         const int64_t wanted = kw.Int("num_paragraphs");
         return [=](std::string_view value) {
           const std::vector<std::string_view> paragraphs = divider->Split(value);
           int64_t count = static_cast<int64_t>(paragraphs.size());
           for (size_t i = 0; i < paragraphs.size(); ++i) {
             if (!PythonStrip(paragraphs[i]).empty()) continue;
             if (i != 0 && i + 1 != paragraphs.size()) return false;
             --count;
           }
           return count == wanted;
         };
       }},
      {"length_constraints:number_words",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto word = Compile("\\w+", in.id);  // nltk's RegexpTokenizer(r"\w+")
         const int64_t threshold = kw.Int("num_words");
         const bool at_least = kw.AtLeast("relation");
         return [=](std::string_view value) {
           return Compare(static_cast<int64_t>(word->Count(value)), at_least, threshold);
         };
       }},
      {"length_constraints:nth_paragraph_first_word",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         const int64_t wanted = kw.Int("num_paragraphs");
         const int64_t nth = kw.Int("nth_paragraph");
         if (nth > wanted) {
           Fail("ifeval", "instruction '{}': nth_paragraph {} is past num_paragraphs {}", in.id,
                nth, wanted);
         }
         const std::string first_word = text::Lowercase(kw.String("first_word"));
         return [=](std::string_view value) {
           const std::vector<std::string_view> paragraphs = text::PythonSplit(value, "\n\n");
           int64_t count = static_cast<int64_t>(paragraphs.size());
           for (std::string_view p : paragraphs) {
             if (PythonStrip(p).empty()) --count;
           }
           if (nth > count) return false;
           const std::string_view paragraph = PythonStrip(paragraphs[static_cast<size_t>(nth - 1)]);
           if (paragraph.empty()) return false;
           std::string_view word = text::PythonSplitWhitespace(paragraph)[0];
           word = text::PythonLStrip(text::PythonLStrip(word, "'"), "\"");
           const size_t end = word.find_first_of(".,?!'\"");
           const std::string found = text::Lowercase(word.substr(0, end));
           return count == wanted && found == first_word;
         };
       }},
      {"detectable_content:number_placeholders",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto placeholder = Compile("\\[.*?\\]", in.id);
         const int64_t wanted = kw.Int("num_placeholders");
         return [=](std::string_view value) {
           return static_cast<int64_t>(placeholder->Count(value)) >= wanted;
         };
       }},
      {"detectable_content:postscript",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         const std::string marker(PythonStrip(kw.String("postscript_marker")));
         std::string pattern;
         if (marker == "P.P.S") {
           pattern = "\\s*p\\.\\s?p\\.\\s?s.*$";
         } else if (marker == "P.S.") {
           pattern = "\\s*p\\.\\s?s\\..*$";
         } else {
           pattern = fmt::format("\\s*{}.*$", text::Lowercase(marker));
         }
         auto postscript = Compile(pattern, in.id, {.multiline = true});
         return [=](std::string_view value) { return postscript->Search(text::Lowercase(value)); };
       }},
      {"detectable_format:number_bullet_lists",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto star = Compile("^\\s*\\*[^\\*].*$", in.id, {.multiline = true});
         auto dash = Compile("^\\s*-.*$", in.id, {.multiline = true});
         const int64_t wanted = kw.Int("num_bullets");
         return [=](std::string_view value) {
           return static_cast<int64_t>(star->Count(value) + dash->Count(value)) == wanted;
         };
       }},
      {"detectable_format:constrained_response",
       [](const IfevalInstruction&, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         return [](std::string_view value) {
           const std::string_view stripped = PythonStrip(value);
           for (const char* option :
                {"My answer is yes.", "My answer is no.", "My answer is maybe."}) {
             if (stripped.find(option) != std::string_view::npos) return true;
           }
           return false;
         };
       }},
      {"detectable_format:number_highlighted_sections",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         auto single = Compile("\\*[^\\n\\*]*\\*", in.id);
         auto twin = Compile("\\*\\*[^\\n\\*]*\\*\\*", in.id);
         const int64_t wanted = kw.Int("num_highlights");
         return [=](std::string_view value) {
           std::vector<std::pair<size_t, size_t>> matches;
           int64_t count = 0;
           single->FindAll(value, matches);
           for (const auto& [b, e] : matches) {
             if (!PythonStrip(text::PythonStrip(value.substr(b, e - b), "*")).empty()) ++count;
           }
           twin->FindAll(value, matches);
           for (const auto& [b, e] : matches) {
             const std::string_view inner =
                 RemoveSuffix(RemovePrefix(value.substr(b, e - b), "**"), "**");
             if (!PythonStrip(inner).empty()) ++count;
           }
           return count >= wanted;
         };
       }},
      {"detectable_format:multiple_sections",
       [](const IfevalInstruction& in, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         const std::string splitter(PythonStrip(kw.String("section_spliter")));
         auto section = Compile(fmt::format("\\s?{}\\s?\\d+\\s?", splitter), in.id);
         const int64_t wanted = kw.Int("num_sections");
         return [=](std::string_view value) {
           return static_cast<int64_t>(section->Count(value)) >= wanted;
         };
       }},
      {"detectable_format:json_format",
       [](const IfevalInstruction&, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         return [](std::string_view value) {
           std::string_view v = PythonStrip(value);
           for (const char* prefix : {"```json", "```Json", "```JSON", "```"}) {
             v = RemovePrefix(v, prefix);
           }
           return PythonJsonLoads(PythonStrip(RemoveSuffix(v, "```")));
         };
       }},
      {"detectable_format:title",
       [](const IfevalInstruction& in, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         auto title = Compile("<<[^\\n]+>>", in.id);
         return [=](std::string_view value) {
           std::vector<std::pair<size_t, size_t>> matches;
           title->FindAll(value, matches);
           return std::any_of(matches.begin(), matches.end(), [&](const auto& m) {
             const std::string_view t = value.substr(m.first, m.second - m.first);
             return !PythonStrip(text::PythonRStrip(text::PythonLStrip(t, "<"), ">")).empty();
           });
         };
       }},
      {"combination:two_responses",
       [](const IfevalInstruction&, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         return [](std::string_view value) {
           const std::vector<std::string_view> responses = text::PythonSplit(value, "******");
           std::vector<std::string_view> valid;
           for (size_t i = 0; i < responses.size(); ++i) {
             if (PythonStrip(responses[i]).empty()) {
               if (i != 0 && i + 1 != responses.size()) return false;
             } else {
               valid.push_back(responses[i]);
             }
           }
           return valid.size() == 2 && PythonStrip(valid[0]) != PythonStrip(valid[1]);
         };
       }},
      {"combination:repeat_prompt",
       [](const IfevalInstruction&, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         const std::string prompt = text::Lowercase(PythonStrip(kw.String("prompt_to_repeat")));
         return [=](std::string_view value) {
           return StartsWith(text::Lowercase(PythonStrip(value)), prompt);
         };
       }},
      {"startend:end_checker",
       [](const IfevalInstruction&, const Kwargs& kw, const IfevalTools&) -> InstructionCheck {
         const std::string end = text::Lowercase(PythonStrip(kw.String("end_phrase")));
         return [=](std::string_view value) {
           return EndsWith(text::Lowercase(text::PythonStrip(PythonStrip(value), "\"")), end);
         };
       }},
      {"change_case:capital_word_frequency",
       [](const IfevalInstruction& in, const Kwargs& kw,
          const IfevalTools& tools) -> InstructionCheck {
         const text::PunktSentenceTokenizer* punkt = tools.punkt;
         const int64_t frequency = kw.Int("capital_frequency");
         const bool at_least = kw.AtLeast("capital_relation");
         const std::string id = in.id;
         return [=](std::string_view value) {
           const std::vector<std::string> words =
               text::NltkWordTokenize(value, NeedPunkt(punkt, id));
           const auto capital = std::count_if(words.begin(), words.end(), [](const std::string& w) {
             return text::PythonIsUpper(w);
           });
           return Compare(static_cast<int64_t>(capital), at_least, frequency);
         };
       }},
      {"change_case:english_capital",
       [](const IfevalInstruction& in, const Kwargs&,
          const IfevalTools& tools) -> InstructionCheck {
         const text::LanguageDetector* detector = tools.language_detector;
         const std::string id = in.id;
         return [=](std::string_view value) {
           // isupper() is asked first; langdetect only when it holds (Python's `and`).
           return text::PythonIsUpper(value) && LanguageIs(NeedDetector(detector, id), value, "en");
         };
       }},
      {"change_case:english_lowercase",
       [](const IfevalInstruction& in, const Kwargs&,
          const IfevalTools& tools) -> InstructionCheck {
         const text::LanguageDetector* detector = tools.language_detector;
         const std::string id = in.id;
         return [=](std::string_view value) {
           return text::PythonIsLower(value) && LanguageIs(NeedDetector(detector, id), value, "en");
         };
       }},
      {"punctuation:no_comma",
       [](const IfevalInstruction&, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         return [](std::string_view value) { return value.find(',') == std::string_view::npos; };
       }},
      {"startend:quotation",
       [](const IfevalInstruction&, const Kwargs&, const IfevalTools&) -> InstructionCheck {
         return [](std::string_view value) {
           const std::string_view v = PythonStrip(value);
           return v.size() > 1 && v.front() == '"' && v.back() == '"';
         };
       }},
  };
  return registry;
}

}  // namespace

const std::vector<std::string>& IfevalInstructionIds() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& entry : Registry()) out.push_back(entry.first);
    return out;
  }();
  return ids;
}

InstructionCheck MakeInstructionCheck(const IfevalInstruction& instruction,
                                      const IfevalTools& tools) {
  for (const auto& [id, build] : Registry()) {
    if (id == instruction.id) return build(instruction, Kwargs(instruction), tools);
  }
  Fail("ifeval", "unknown instruction id '{}' (known: {})", instruction.id,
       fmt::join(IfevalInstructionIds(), ", "));
}

std::vector<std::string> LooseResponseVariants(std::string_view response) {
  const std::vector<std::string_view> lines = text::PythonSplit(response, "\n");
  auto join = [&](size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
      if (i > begin) out += "\n";
      out.append(lines[i]);
    }
    return std::string(PythonStrip(out));
  };
  const size_t n = lines.size();
  const std::string remove_first = join(std::min<size_t>(1, n), n);
  const std::string remove_last = join(0, n - 1);
  const std::string remove_both = n >= 2 ? join(1, n - 1) : std::string();
  auto no_stars = [](std::string_view s) { return text::PythonReplace(s, "*", ""); };
  return {std::string(response), no_stars(response),   remove_first,
          remove_last,           remove_both,          no_stars(remove_first),
          no_stars(remove_last), no_stars(remove_both)};
}

bool IfevalVerdict::strict_all() const {
  return std::all_of(strict.begin(), strict.end(), [](bool b) { return b; });
}
bool IfevalVerdict::loose_all() const {
  return std::all_of(loose.begin(), loose.end(), [](bool b) { return b; });
}

IfevalVerdict CheckIfevalResponse(const std::vector<InstructionCheck>& checks,
                                  std::string_view raw_response) {
  // Python holds the response as str: invalid bytes are U+FFFD, as decode(errors="replace").
  const std::string response = ReplaceInvalidUtf8(raw_response);
  const std::vector<std::string> variants = LooseResponseVariants(response);
  auto follows = [](const InstructionCheck& check, std::string_view r) {
    return !PythonStrip(r).empty() && check(r);
  };
  IfevalVerdict verdict;
  for (const InstructionCheck& check : checks) {
    verdict.strict.push_back(follows(check, response));
    verdict.loose.push_back(std::any_of(variants.begin(), variants.end(),
                                        [&](const std::string& r) { return follows(check, r); }));
  }
  return verdict;
}

}  // namespace proctor
