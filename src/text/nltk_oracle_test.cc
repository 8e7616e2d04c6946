// Punkt, nltk.word_tokenize and langdetect against nltk and langdetect themselves (the oracle
// environment's packages, through tools/oracle/lm_eval_ifeval.py), on IFEval-style responses,
// stories, the project's docs and hand-picked edge cases.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "text/langdetect.h"
#include "text/nltk_word_tokenizer.h"
#include "text/punkt.h"
#include "util/file.h"
#include "util/testing_files.h"
#include "util/testing_oracles.h"

namespace proctor::text {
namespace {

namespace fs = std::filesystem;

std::string Python() { return proctor::testing::Oracles("python").Path("python"); }
std::string Tool(const char* name) {
  return fmt::format("{}/tools/oracle/{}", PROCTOR_SOURCE_DIR, name);
}

// Runs an oracle command and parses what it printed.
// Texts: generated IFEval responses, TinyStories' paragraphs, the docs' paragraphs, edge cases.
std::vector<std::string> Texts(const fs::path& dir) {
  const fs::path fixtures = proctor::testing::FixturesDir();
  std::vector<std::string> texts;
  const nlohmann::json cases = proctor::testing::RunOracleJson(
      fmt::format("python3 {} {} --per-prompt 2 --step 2 --seed 7", Tool("ifeval_cases.py"),
                  (fixtures / "ifeval" / "input_data.jsonl").string()));
  for (const auto& c : cases) texts.push_back(c["response"].get<std::string>());
  for (const fs::path& file : {fixtures / "tinystories" / "tinystories_sample.txt",
                               fs::path(PROCTOR_SOURCE_DIR) / "docs" / "task-evals.md",
                               fs::path(PROCTOR_SOURCE_DIR) / "docs" / "statistics.md"}) {
    const std::string content = ReadFileToString(file);
    size_t begin = 0;
    while (begin < content.size()) {
      const size_t end = std::min(content.find("\n\n", begin), content.size());
      texts.push_back(content.substr(begin, end - begin));
      begin = end + 2;
    }
  }
  for (const char* edge : {"",
                           " ",
                           "Hello.",
                           "Hello",
                           "...",
                           "!!!",
                           "What?! Really?!",
                           "a. b. c.",
                           "U.S.A. is big.",
                           "He said \"stop.\" Then he left.",
                           "(Sent1.) Sent2.",
                           "End. \"Quote.\" Next.",
                           "Mr. X met Dr. Y. They talked.",
                           "J. Smith and A. B. Jones wrote it.",
                           "It cost $3.50. That is 1,000.5 cents... no.",
                           "Line one.\nLine two.\n\nNew para.",
                           "Tabs\tand\u00a0spaces.  Two  spaces. Mixed\u3000space.",
                           "e.g. this i.e. that etc. end.",
                           "Numbers 1. 2. 3. and 4.5.6.",
                           "The end.''",
                           "'Quoted.' Next one.",
                           "ALL CAPS. NEXT.",
                           "über. Ärger. émile. Ökonomie.",
                           "Ends with ellipsis... Next? Yes!",
                           "a--b -- c---d.",
                           "We can't, won't, shouldn't've. Gonna wanna gotta.",
                           "'tis 'twas cannot gimme lemme.",
                           "Price: $5; tax: 5%; total & more @ #1.",
                           "«Bonjour.» „Hallo.“ ‘Hi.’ “Hey.”",
                           "Visit https://example.com/a?b=c or mail me@example.org now.",
                           "Tiếng Việt có dấu: ẩm thực. Ti\u0301ếng vie\u0323\u0302t.",
                           "Română: ș ț Ș Ț.",
                           "日本語のテキスト。カタカナ。ひらがな。漢字。",
                           "中文文本，简体字。繁體字測試。",
                           "한국어 문장입니다. 또 다른 문장.",
                           "ㄅㄆㄇㄈ bopomofo",
                           "12345 67890",
                           "####",
                           "<<>>",
                           "SHOUTING WORDS EVERYWHERE HERE",
                           "MiXeD CaSe WoRdS",
                           "x"}) {
    texts.emplace_back(edge);
  }
  std::ofstream(dir / "texts.json") << nlohmann::json(texts).dump();
  return texts;
}

std::string Show(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class NltkOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string problem = proctor::testing::OraclesProblem({"python"});
        !problem.empty()) {
      GTEST_SKIP() << problem;
    }
  }
  proctor::testing::TempDir tmp_;
};

// nltk's Punkt, untrained and with parameters nltk's PunktTrainer learned, gives the same
// sentences, and word_tokenize the same tokens.
TEST_F(NltkOracle, PunktAndWordTokenizeMatchNltk) {
  const std::vector<std::string> texts = Texts(tmp_.path());
  const fs::path fixtures = proctor::testing::FixturesDir();
  const nlohmann::json trained_counts = proctor::testing::RunOracleJson(fmt::format(
      "{} {} train-punkt {} {} --out {}", Python(), Tool("lm_eval_ifeval.py"),
      (fixtures / "tinystories" / "tinystories_sample.txt").string(),
      fmt::format("{}/docs/*.md", PROCTOR_SOURCE_DIR), (tmp_.path() / "nltk").string()));
  ASSERT_GT(trained_counts.value("abbrev_types.txt", 0), 5) << trained_counts.dump();
  const fs::path params_dir = tmp_.path() / "nltk" / "tokenizers" / "punkt_tab" / "english";
  for (const bool trained : {false, true}) {
    const nlohmann::json theirs = proctor::testing::RunOracleJson(
        fmt::format("{} {} punkt {} {}", Python(), Tool("lm_eval_ifeval.py"),
                    (tmp_.path() / "texts.json").string(),
                    trained ? "--nltk-data " + (tmp_.path() / "nltk").string() : std::string()));
    ASSERT_EQ(theirs.size(), texts.size());
    const PunktSentenceTokenizer punkt(trained ? ReadPunktTab(params_dir) : PunktParameters{});
    size_t sentences = 0, words = 0, multi = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<std::string> mine;
      for (std::string_view s : punkt.Sentences(texts[i])) mine.emplace_back(s);
      const auto expected = theirs[i]["sentences"].get<std::vector<std::string>>();
      EXPECT_EQ(mine, expected) << (trained ? "trained" : "untrained") << " text " << i << ": "
                                << Show(texts[i]);
      EXPECT_EQ(NltkWordTokenize(texts[i], punkt),
                theirs[i]["words"].get<std::vector<std::string>>())
          << (trained ? "trained" : "untrained") << " text " << i << ": " << Show(texts[i]);
      sentences += expected.size();
      words += theirs[i]["words"].size();
      multi += expected.size() > 1;
    }
    std::printf("[ nltk ] %s Punkt: %zu texts, %zu sentences (%zu texts of several), %zu words\n",
                trained ? "trained" : "untrained", texts.size(), sentences, multi, words);
  }
}

// langdetect with DetectorFactory.seed = 0 names the same language (or finds no features).
TEST_F(NltkOracle, LangdetectMatchesLangdetect) {
  const std::vector<std::string> texts = Texts(tmp_.path());
  const nlohmann::json theirs = proctor::testing::RunOracleJson(
      fmt::format("{} {} langdetect {}", Python(), Tool("lm_eval_ifeval.py"),
                  (tmp_.path() / "texts.json").string()));
  ASSERT_EQ(theirs.size(), texts.size());
  const std::string package =
      proctor::testing::RunCommand(
          Python() +
          " -c 'import langdetect, os; print(os.path.dirname(langdetect.__file__), end=\"\")'")
          .output;
  const LanguageDetector detector(package);
  EXPECT_EQ(detector.languages().size(), 55u);
  std::map<std::string, int> seen;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::optional<std::string> mine = detector.Detect(texts[i]);
    const nlohmann::json& expected = theirs[i];
    EXPECT_EQ(mine ? nlohmann::json(*mine) : nlohmann::json(), expected)
        << "text " << i << ": " << Show(texts[i]);
    ++seen[expected.is_null() ? "(none)" : expected.get<std::string>()];
  }
  std::string summary;
  for (const auto& [lang, count] : seen) summary += fmt::format(" {}:{}", lang, count);
  std::printf("[ langdetect ] %zu texts:%s\n", texts.size(), summary.c_str());
  EXPECT_GE(seen.size(), 15u);  // the texts reach many languages, not only English
}

}  // namespace
}  // namespace proctor::text
