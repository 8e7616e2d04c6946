#include "eval/tasks/task_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "util/error.h"
#include "util/testing_files.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ParseCsv, QuotesDoubledQuotesAndLineBreaksInsideQuotes) {
  const auto records = ParseCsv("a,\"b,c\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",x,\n", "t.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b,c", "say \"hi\""}));
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"two\nlines", "x", ""}));
  EXPECT_EQ(records[1].line, 2);
}

TEST(ParseCsv, ALastLineWithoutNewlineIsARecord) {
  const auto records = ParseCsv("a,b\nc,d", "t.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"c", "d"}));
}

TEST(ParseCsv, MalformedQuotingIsAnErrorNamingFileAndLine) {
  EXPECT_THAT(testing::ErrorOf([] { ParseCsv("a,b\n\"open,c\n", "f.csv"); }),
              HasSubstr("f.csv:2: a quoted field is never closed"));
  EXPECT_THAT(testing::ErrorOf([] { ParseCsv("a,b\nx\"y,c\n", "f.csv"); }),
              HasSubstr("f.csv:2: a quote inside an unquoted field"));
  EXPECT_THAT(testing::ErrorOf([] { ParseCsv("\"a\"b,c\n", "f.csv"); }),
              HasSubstr("f.csv:1: text after a closing quote"));
}

TEST(ReadMmlu, ReadsTheRealFilesWithTheirCanonicalCounts) {
  const fs::path dir = testing::FixturesDir() / "mmlu";
  if (!fs::exists(dir)) GTEST_SKIP() << "fixture absent: " << dir;
  const std::vector<MmluSubject> subjects = ReadMmlu(dir);
  ASSERT_EQ(subjects.size(), 57u);
  size_t test = 0, dev = 0;
  for (const MmluSubject& s : subjects) {
    test += s.test.size();
    dev += s.dev.size();
  }
  EXPECT_EQ(test, 14042u);  // SOURCES.md: the canonical numbers
  EXPECT_EQ(dev, 285u);
  EXPECT_EQ(subjects.front().name, "abstract_algebra");
  EXPECT_EQ(subjects.back().name, "world_religions");
  // astronomy_test.csv row 1: a quoted question with doubled quotes.
  const auto astronomy = std::find_if(subjects.begin(), subjects.end(),
                                      [](const MmluSubject& s) { return s.name == "astronomy"; });
  ASSERT_NE(astronomy, subjects.end());
  EXPECT_EQ(astronomy->test[0].question, "What is true for a type-Ia (\"type one-a\") supernova?");
  EXPECT_EQ(astronomy->test[0].choices[3], "This type produces high amounts of X-rays.");
  EXPECT_EQ(astronomy->test[0].answer, 0);
  EXPECT_EQ(astronomy->test[1].answer, 3);
}

TEST(ReadMmlu, MalformedRowsAndMissingFilesNameTheFileAndLine) {
  const testing::TempDir tmp;
  const fs::path dir = tmp.path() / "mmlu";
  const std::string five = "q1,a,b,c,d,A\nq2,a,b,c,d,B\nq3,a,b,c,d,C\nq4,a,b,c,d,D\nq5,a,b,c,d,A\n";
  Write(dir / "dev" / "x_dev.csv", five);
  Write(dir / "test" / "x_test.csv", "q,a,b,c,d,A\nq,a,b,c,E\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadMmlu(dir); }),
              HasSubstr("x_test.csv:2: expected 6 fields (question, A, B, C, D, answer), got 5"));
  Write(dir / "test" / "x_test.csv", "q,a,b,c,d,A\nq,a,b,c,d,E\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadMmlu(dir); }),
              HasSubstr("x_test.csv:2: the answer must be one of A, B, C, D, got 'E'"));
  Write(dir / "test" / "x_test.csv", "q,a,b,c,d,A\n");
  Write(dir / "test" / "y_test.csv", "q,a,b,c,d,A\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadMmlu(dir); }),
              HasSubstr("subject 'y' has a test file but no few-shot file"));
  EXPECT_THAT(testing::ErrorOf([&] { ReadMmlu(tmp.path() / "nowhere"); }), HasSubstr("no folder"));
}

TEST(ReadGsm8k, ReadsTheRealFile) {
  const fs::path file = testing::FixturesDir() / "gsm8k" / "test.jsonl";
  if (!fs::exists(file)) GTEST_SKIP() << "fixture absent: " << file;
  const std::vector<Gsm8kItem> items = ReadGsm8k(file);
  ASSERT_EQ(items.size(), 1319u);
  EXPECT_EQ(items[0].answer, 18);  // Janet's ducks
  EXPECT_TRUE(items[0].question.starts_with("Janet\u2019s ducks lay 16 eggs per day."));
}

TEST(ReadGsm8k, MalformedLinesNameTheFileAndLine) {
  const testing::TempDir tmp;
  const fs::path file = tmp.path() / "test.jsonl";
  Write(file, "{\"question\": \"q\", \"answer\": \"x\\n#### 1,234\"}\n{\"question\": 3}\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadGsm8k(file); }),
              HasSubstr("test.jsonl:2: expected {\"question\": str, \"answer\": str}"));
  Write(file, "{\"question\": \"q\", \"answer\": \"no final answer\"}\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadGsm8k(file); }),
              HasSubstr("test.jsonl:1: the answer does not end"));
  Write(file, "{\"question\": \"q\", \"answer\": \"x\\n#### 1,234\"}\n{truncated\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadGsm8k(file); }),
              HasSubstr("test.jsonl:2: not a JSON object"));
  Write(file, "{\"question\": \"q\", \"answer\": \"x\\n#### -1,234.5\"}\n");
  EXPECT_EQ(ReadGsm8k(file)[0].answer, -1234.5);
  EXPECT_THAT(testing::ErrorOf([&] { ReadGsm8k(tmp.path() / "absent.jsonl"); }),
              HasSubstr("cannot open"));
}

}  // namespace
}  // namespace proctor
