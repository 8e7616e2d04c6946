// Punkt's parameter files and what they change, on hand-worked sentences (the oracle test compares
// hundreds of texts with nltk itself).
#include "text/punkt.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "util/testing_files.h"

namespace proctor::text {
namespace {

TEST(ReadPunktTab, ReadsNltksFilesAndNamesBadOnes) {
  const testing::TempDir tmp;
  auto write = [&](const char* name, const std::string& content) {
    std::ofstream(tmp.path() / name, std::ios::binary) << content;
  };
  write("abbrev_types.txt", "dr\r\ne.g\n");
  write("sent_starters.txt", "however");
  write("collocations.tab", "s.\tbach");
  write("ortho_context.tab", "the\t114\nthey\t2\n");
  const PunktParameters p = ReadPunktTab(tmp.path());
  EXPECT_EQ(p.abbrev_types, (std::set<std::string>{"dr", "e.g"}));
  EXPECT_EQ(p.sent_starters, (std::set<std::string>{"however"}));
  EXPECT_EQ(p.collocations.count({"s.", "bach"}), 1u);
  EXPECT_EQ(p.ortho_context.at("the"), 114);
  // With "dr" an abbreviation, "Dr. Smith" does not end a sentence.
  EXPECT_EQ(PunktSentenceTokenizer(p).Sentences("I met Dr. Smith. He left.").size(), 2u);
  EXPECT_EQ(PunktSentenceTokenizer({}).Sentences("I met Dr. Smith. He left.").size(), 3u);
  write("ortho_context.tab", "the\tmany\n");
  EXPECT_THAT(testing::ErrorOf([&] { ReadPunktTab(tmp.path()); }),
              ::testing::AllOf(::testing::HasSubstr("ortho_context.tab line 1"),
                               ::testing::HasSubstr("'many' is not an integer")));
  write("collocations.tab", "only-one-field");
  EXPECT_THAT(testing::ErrorOf([&] { ReadPunktTab(tmp.path()); }),
              ::testing::HasSubstr("two tab-separated fields"));
  std::filesystem::remove(tmp.path() / "sent_starters.txt");
  EXPECT_THAT(testing::ErrorOf([&] { ReadPunktTab(tmp.path()); }),
              ::testing::HasSubstr("sent_starters.txt"));
}

}  // namespace
}  // namespace proctor::text
