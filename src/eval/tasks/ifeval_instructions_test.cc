// IFEval's verifiers on hand-worked cases: for every instruction id a response that follows it
// and one that does not, each reasoned from lm-eval's check_following (the oracle test compares
// thousands more with lm-eval itself).
#include "eval/tasks/ifeval_instructions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "text/punkt.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* id;
  const char* kwargs;  // JSON
  const char* response;
  bool follows;
};

const Case kCases[] = {
    {"keywords:existence", R"({"keywords": ["apple", "pie"]})", "An APPLE pie.", true},
    {"keywords:existence", R"({"keywords": ["apple", "pie"]})", "An apple tart.", false},
    {"keywords:frequency", R"({"keyword": "cat", "frequency": 2, "relation": "at least"})",
     "Cat and cat.", true},
    // The keyword is a pattern, not a word: "concatenate" holds a "cat" too.
    {"keywords:frequency", R"({"keyword": "cat", "frequency": 2, "relation": "less than"})",
     "A cat may concatenate.", false},
    {"keywords:forbidden_words", R"({"forbidden_words": ["red"]})", "Redness is fine.", true},
    {"keywords:forbidden_words", R"({"forbidden_words": ["red"]})", "It is RED.", false},
    {"keywords:letter_frequency",
     R"({"letter": "a", "let_frequency": 3, "let_relation": "at least"})", "A banana", true},
    {"keywords:letter_frequency",
     R"({"letter": "a", "let_frequency": 3, "let_relation": "less than"})", "A banana", false},
    {"length_constraints:number_paragraphs", R"({"num_paragraphs": 2})", "One.\n***\nTwo.", true},
    // An empty paragraph between two dividers breaks it; at the ends it is dropped.
    {"length_constraints:number_paragraphs", R"({"num_paragraphs": 2})", "One.\n***\n***\nTwo.",
     false},
    {"length_constraints:number_paragraphs", R"({"num_paragraphs": 2})", "***\nOne. *** Two.\n***",
     true},
    {"length_constraints:number_words", R"({"num_words": 4, "relation": "less than"})",
     "one two, three!", true},
    {"length_constraints:number_words", R"({"num_words": 3, "relation": "at least"})", "don't stop",
     true},  // \w+ splits "don't" into two words: 3 in all
    {"length_constraints:number_words", R"({"num_words": 4, "relation": "at least"})", "don't stop",
     false},
    {"length_constraints:nth_paragraph_first_word",
     R"({"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"})",
     "First.\n\n\"Then, second.", true},
    {"length_constraints:nth_paragraph_first_word",
     R"({"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"})",
     "First.\n\nThereafter second.", false},
    {"detectable_content:number_placeholders", R"({"num_placeholders": 2})", "[name] at [place]",
     true},
    {"detectable_content:number_placeholders", R"({"num_placeholders": 2})", "[name] at place",
     false},
    {"detectable_content:postscript", R"({"postscript_marker": "P.S."})", "Hi.\n\np. s. bye", true},
    {"detectable_content:postscript", R"({"postscript_marker": "P.P.S"})", "Hi. PS bye", false},
    {"detectable_format:number_bullet_lists", R"({"num_bullets": 2})", "* one\n- two", true},
    // "**bold**" is not a bullet ("\*[^\*]").
    {"detectable_format:number_bullet_lists", R"({"num_bullets": 2})", "* one\n**bold**", false},
    {"detectable_format:constrained_response", "{}", "  My answer is no. Because.", true},
    {"detectable_format:constrained_response", "{}", "my answer is no.", false},
    {"detectable_format:number_highlighted_sections", R"({"num_highlights": 2})",
     "*one* and **two**", true},
    {"detectable_format:number_highlighted_sections", R"({"num_highlights": 2})", "* * and *one*",
     false},
    {"detectable_format:multiple_sections", R"({"section_spliter": "Section", "num_sections": 2})",
     "Section 1\na\nSection 2\nb", true},
    {"detectable_format:multiple_sections", R"({"section_spliter": "Section", "num_sections": 2})",
     "Section 1\na\nsection 2\nb", false},
    {"detectable_format:json_format", "{}", "```json\n{\"a\": [1, 2]}\n```", true},
    {"detectable_format:json_format", "{}", "{\"a\": NaN, \"b\": -Infinity}", true},  // Python's
    {"detectable_format:json_format", "{}", "{\"a\": 1,}", false},
    {"detectable_format:json_format", "{}", "[1NaN]", false},
    {"detectable_format:title", "{}", "<<My Title>>\ntext", true},
    {"detectable_format:title", "{}", "<<  >> and <<a\nb>>", false},
    {"combination:two_responses", "{}", "One.\n******\nTwo.", true},
    {"combination:two_responses", "{}", "One.\n******\n One. ", false},
    {"combination:repeat_prompt", R"({"prompt_to_repeat": "Say hi."})", " SAY HI. Hi!", true},
    {"combination:repeat_prompt", R"({"prompt_to_repeat": "Say hi."})", "Hi! Say hi.", false},
    {"startend:end_checker", R"({"end_phrase": "Any other questions?"})",
     "Done. any other questions?\"  ", true},
    {"startend:end_checker", R"({"end_phrase": "Any other questions?"})",
     "Any other questions? Thanks.", false},
    {"change_case:capital_word_frequency",
     R"({"capital_frequency": 2, "capital_relation": "at least"})", "THE END. OK then.", true},
    {"change_case:capital_word_frequency",
     R"({"capital_frequency": 2, "capital_relation": "at least"})", "The End. Ok.", false},
    {"punctuation:no_comma", "{}", "No commas here.", true},
    {"punctuation:no_comma", "{}", "One, two.", false},
    {"startend:quotation", "{}", " \"Quoted.\"\n", true},
    {"startend:quotation", "{}", "\"", false},
};

TEST(IfevalInstructions, EveryIdFollowedAndNot) {
  const text::PunktSentenceTokenizer punkt(text::PunktParameters{});
  const IfevalTools tools{.punkt = &punkt, .language_detector = nullptr};
  std::map<std::string, std::array<int, 2>> seen;
  for (const Case& c : kCases) {
    const IfevalInstruction instruction{.id = c.id, .kwargs = nlohmann::json::parse(c.kwargs)};
    const InstructionCheck check = MakeInstructionCheck(instruction, tools);
    EXPECT_EQ(check(c.response), c.follows)
        << c.id << " " << c.kwargs << " on '" << c.response << "'";
    ++seen[c.id][c.follows ? 0 : 1];
  }
  for (const auto& [id, sides] : seen) {
    EXPECT_GT(sides[0], 0) << id;
    EXPECT_GT(sides[1], 0) << id;
  }
  // Every id but number_sentences (below) and the three langdetect ones (LanguageDetector needs
  // its data: the oracle test).
  EXPECT_EQ(seen.size() + 4, IfevalInstructionIds().size());
}

TEST(IfevalInstructions, NumberOfSentencesCountsPunktSentences) {
  const text::PunktSentenceTokenizer punkt(text::PunktParameters{});
  const IfevalTools tools{.punkt = &punkt, .language_detector = nullptr};
  const IfevalInstruction fewer{.id = "length_constraints:number_sentences",
                                .kwargs = {{"num_sentences", 3}, {"relation", "less than"}}};
  EXPECT_TRUE(MakeInstructionCheck(fewer, tools)("One. Two!"));
  EXPECT_FALSE(MakeInstructionCheck(fewer, tools)("One. Two! Three?"));
}

TEST(IfevalInstructions, BadKwargsAreNamedNotRandom) {
  const IfevalTools none;
  auto make = [&](const char* id, const char* kwargs) {
    return testing::ErrorOf(
        [&] { MakeInstructionCheck({.id = id, .kwargs = nlohmann::json::parse(kwargs)}, none); });
  };
  EXPECT_THAT(make("keywords:frequency", R"({"keyword": "x", "relation": "at least"})"),
              HasSubstr("needs kwarg 'frequency'"));
  EXPECT_THAT(
      make("keywords:frequency", R"({"keyword": "x", "frequency": 0, "relation": "at least"})"),
      HasSubstr("'frequency' must be a positive integer"));
  EXPECT_THAT(
      make("keywords:frequency", R"({"keyword": "x", "frequency": 2, "relation": "about"})"),
      HasSubstr("'less than' or 'at least'"));
  EXPECT_THAT(make("keywords:existence", R"({"keywords": ["(unclosed"]})"),
              HasSubstr("does not compile"));
  EXPECT_THAT(make("length_constraints:nth_paragraph_first_word",
                   R"({"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"})"),
              HasSubstr("nth_paragraph 3 is past num_paragraphs 2"));
  EXPECT_THAT(make("keywords:nonsense", "{}"), HasSubstr("unknown instruction id"));
  // Built without its tool, a check validates its kwargs and fails only when run.
  const InstructionCheck check = MakeInstructionCheck(
      {.id = "language:response_language", .kwargs = {{"language", "de"}}}, none);
  EXPECT_THAT(testing::ErrorOf([&] { check("Hallo"); }), HasSubstr("needs langdetect"));
}

TEST(IfevalInstructions, LooseVariantsAndEmptyResponses) {
  EXPECT_EQ(LooseResponseVariants("Sure:\n*a*\nbye"),
            (std::vector<std::string>{"Sure:\n*a*\nbye", "Sure:\na\nbye", "*a*\nbye", "Sure:\n*a*",
                                      "*a*", "a\nbye", "Sure:\na", "a"}));
  const IfevalTools none;
  const std::vector<InstructionCheck> checks = {
      MakeInstructionCheck({.id = "punctuation:no_comma", .kwargs = nlohmann::json::object()},
                           none),
      MakeInstructionCheck({.id = "startend:quotation", .kwargs = nlohmann::json::object()}, none)};
  // A first line that breaks the quotation passes loosely once dropped.
  IfevalVerdict v = CheckIfevalResponse(checks, "Here:\n\"quoted\"");
  EXPECT_EQ(v.strict, (std::vector<bool>{true, false}));
  EXPECT_EQ(v.loose, (std::vector<bool>{true, true}));
  EXPECT_FALSE(v.strict_all());
  EXPECT_TRUE(v.loose_all());
  // An empty response follows nothing, even "no comma".
  v = CheckIfevalResponse(checks, " \n ");
  EXPECT_EQ(v.strict, (std::vector<bool>{false, false}));
  EXPECT_EQ(v.loose, (std::vector<bool>{false, false}));
  // Invalid UTF-8 is read as U+FFFD, not passed to the regex engine as it is.
  v = CheckIfevalResponse(checks, "\"caf\xe9\"");
  EXPECT_EQ(v.strict, (std::vector<bool>{true, true}));
}

}  // namespace
}  // namespace proctor
