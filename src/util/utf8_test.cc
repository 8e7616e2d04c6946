// The UTF-8 codec: every length class both ways, then the inputs that are not well-formed
// (surrogates, overlong forms, values past U+10FFFF, truncated sequences, invalid lead bytes)
// under each InvalidByte policy, and the strict validator and lossy repair.
#include "util/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace proctor {
namespace {

constexpr InvalidByte kPolicies[] = {InvalidByte::kAsLatin1, InvalidByte::kFlagged};
const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// One DecodeUtf8 step: the value returned and the bytes consumed.
struct Step {
  char32_t value;
  size_t bytes;
  bool operator==(const Step&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Step& step) {
  return os << "{0x" << std::hex << static_cast<uint32_t>(step.value) << std::dec << ", "
            << step.bytes << "}";
}

std::vector<Step> DecodeAll(std::string_view s, InvalidByte invalid) {
  std::vector<Step> steps;
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t value = DecodeUtf8(s, &pos, invalid);
    steps.push_back({value, pos - start});
  }
  return steps;
}

// What each policy returns for the invalid byte b.
char32_t Invalid(uint8_t b, InvalidByte invalid) {
  return invalid == InvalidByte::kFlagged ? (kInvalidByteFlag | b) : char32_t{b};
}

std::string Encode(char32_t cp) {
  std::string out;
  AppendUtf8(cp, &out);
  return out;
}

struct Encoded {
  char32_t cp;
  std::string bytes;
};

// The first and last code point of each length class, and one in the middle.
const Encoded kEveryLengthClass[] = {
    {0x00, std::string(1, '\0')},
    {0x41, "A"},
    {0x7F, "\x7F"},
    {0x80, "\xC2\x80"},
    {0xE9, "\xC3\xA9"},
    {0x7FF, "\xDF\xBF"},
    {0x800, "\xE0\xA0\x80"},
    {0x20AC, "\xE2\x82\xAC"},
    {0xFFFF, "\xEF\xBF\xBF"},
    {0x10000, "\xF0\x90\x80\x80"},
    {0x1F600, "\xF0\x9F\x98\x80"},
    {0x10FFFF, "\xF4\x8F\xBF\xBF"},
};

TEST(Utf8, EveryLengthClassEncodesAndDecodes) {
  for (const Encoded& e : kEveryLengthClass) {
    SCOPED_TRACE(testing::Message() << "U+" << std::hex << static_cast<uint32_t>(e.cp));
    EXPECT_EQ(Encode(e.cp), e.bytes);
    EXPECT_EQ(Utf8SequenceLength(static_cast<uint8_t>(e.bytes[0])), e.bytes.size());
    for (InvalidByte invalid : kPolicies) {
      EXPECT_EQ(DecodeAll(e.bytes, invalid), (std::vector<Step>{{e.cp, e.bytes.size()}}));
    }
    EXPECT_TRUE(IsValidUtf8(e.bytes));
    EXPECT_EQ(ReplaceInvalidUtf8(e.bytes), e.bytes);
    EXPECT_EQ(Utf8SequenceStartBefore("x" + e.bytes, e.bytes.size() + 1), 1u);
  }
}

TEST(Utf8, AppendAddsToWhatIsThere) {
  std::string out = "a";
  AppendUtf8(0xE9, &out);
  AppendUtf8(0x1F600, &out);
  EXPECT_EQ(out, "a\xC3\xA9\xF0\x9F\x98\x80");
}

// Structural decoding: the bytes are one step, the same under both policies, though the strict
// validator rejects them.
void ExpectOneStepButNotValid(const Encoded& e) {
  SCOPED_TRACE(testing::Message() << "0x" << std::hex << static_cast<uint32_t>(e.cp));
  for (InvalidByte invalid : kPolicies) {
    EXPECT_EQ(DecodeAll(e.bytes, invalid), (std::vector<Step>{{e.cp, e.bytes.size()}}));
  }
  EXPECT_FALSE(IsValidUtf8(e.bytes));
}

TEST(Utf8, SurrogatesDecodeStructurallyButAreNotValid) {
  for (const Encoded& e : {Encoded{0xD800, "\xED\xA0\x80"}, Encoded{0xDFFF, "\xED\xBF\xBF"}}) {
    ExpectOneStepButNotValid(e);
    EXPECT_EQ(Encode(e.cp), e.bytes);
  }
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));  // U+D7FF, just below the surrogates
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);
}

// Overlong forms are not written back: the encoder always uses the shortest form.
TEST(Utf8, OverlongFormsDecodeStructurallyButAreNotValid) {
  const Encoded kOverlong[] = {
      {0x00, "\xC0\x80"},      {0x7F, "\xC1\xBF"},         {0x00, "\xE0\x80\x80"},
      {0x7FF, "\xE0\x9F\xBF"}, {0x00, "\xF0\x80\x80\x80"}, {0xFFFF, "\xF0\x8F\xBF\xBF"},
  };
  for (const Encoded& e : kOverlong) {
    ExpectOneStepButNotValid(e);
    EXPECT_NE(Encode(e.cp), e.bytes);
    // C0, C1 and the E0 / F0 leads of an overlong form are each a maximal invalid subpart on
    // their own, and so is every continuation byte after them.
    std::string replaced;
    for (size_t i = 0; i < e.bytes.size(); ++i) replaced += kReplacement;
    EXPECT_EQ(ReplaceInvalidUtf8(e.bytes), replaced);
  }
}

TEST(Utf8, ValuesPastU10FFFFDecodeStructurallyButAreNotValid) {
  for (const Encoded& e :
       {Encoded{0x110000, "\xF4\x90\x80\x80"}, Encoded{0x140000, "\xF5\x80\x80\x80"},
        Encoded{0x1FFFFF, "\xF7\xBF\xBF\xBF"}}) {
    ExpectOneStepButNotValid(e);
    EXPECT_EQ(Encode(e.cp), e.bytes);
  }
}

// A lead byte whose sequence is cut short (by the end or by a byte that is not a continuation)
// is one invalid byte; decoding resumes at the next byte.
TEST(Utf8, TruncatedSequencesAreInvalidOneByteAtATime) {
  for (InvalidByte invalid : kPolicies) {
    EXPECT_EQ(DecodeAll("\xC3", invalid), (std::vector<Step>{{Invalid(0xC3, invalid), 1}}));
    EXPECT_EQ(DecodeAll("\xE2\x82", invalid),
              (std::vector<Step>{{Invalid(0xE2, invalid), 1}, {Invalid(0x82, invalid), 1}}));
    EXPECT_EQ(DecodeAll("\xF0\x9F\x98", invalid), (std::vector<Step>{{Invalid(0xF0, invalid), 1},
                                                                     {Invalid(0x9F, invalid), 1},
                                                                     {Invalid(0x98, invalid), 1}}));
    EXPECT_EQ(
        DecodeAll("\xE2\x82"
                  "A",
                  invalid),
        (std::vector<Step>{{Invalid(0xE2, invalid), 1}, {Invalid(0x82, invalid), 1}, {U'A', 1}}));
    EXPECT_EQ(DecodeAll("\xC3\xC3\xA9", invalid),
              (std::vector<Step>{{Invalid(0xC3, invalid), 1}, {0xE9, 2}}));
  }
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(
      IsValidUtf8("\xE2\x82"
                  "A"));
  // A truncated sequence is one maximal subpart: one U+FFFD for all its bytes.
  EXPECT_EQ(ReplaceInvalidUtf8("\xE2\x82"
                               "A"),
            kReplacement + "A");
}

TEST(Utf8, InvalidLeadBytesAreInvalidOneByteAtATime) {
  for (const uint8_t b : {0x80, 0x9F, 0xBF, 0xF8, 0xFB, 0xFC, 0xFE, 0xFF}) {
    SCOPED_TRACE(static_cast<int>(b));
    const std::string s = {static_cast<char>(b), static_cast<char>(0x80), 'z'};
    EXPECT_EQ(Utf8SequenceLength(b), 1u);
    for (InvalidByte invalid : kPolicies) {
      EXPECT_EQ(
          DecodeAll(s, invalid),
          (std::vector<Step>{{Invalid(b, invalid), 1}, {Invalid(0x80, invalid), 1}, {U'z', 1}}));
    }
    EXPECT_FALSE(IsValidUtf8(s));
    EXPECT_EQ(ReplaceInvalidUtf8(s), kReplacement + kReplacement + "z");
  }
}

// kAsLatin1 returns the byte, kFlagged the byte with kInvalidByteFlag: past Unicode, so it is
// never mistaken for U+0080..U+00FF.
TEST(Utf8, PoliciesNameAnInvalidByteDifferently) {
  size_t pos = 0;
  EXPECT_EQ(DecodeUtf8("\xA0", &pos, InvalidByte::kAsLatin1), 0xA0u);
  EXPECT_EQ(pos, 1u);
  pos = 0;
  EXPECT_EQ(DecodeUtf8("\xA0", &pos, InvalidByte::kFlagged), 0x1100A0u);
  EXPECT_EQ(pos, 1u);
  EXPECT_GT(kInvalidByteFlag | 0x80, kMaxCodePoint);
}

// Exhaustively over every two-byte string: both policies take the same steps, and differ only
// in the value of an invalid byte.
TEST(Utf8, PoliciesDifferOnlyInTheValueOfAnInvalidByte) {
  for (int first = 0; first < 256; ++first) {
    for (int second = 0; second < 256; ++second) {
      const std::string s = {static_cast<char>(first), static_cast<char>(second)};
      size_t latin1_pos = 0, flagged_pos = 0;
      while (latin1_pos < s.size()) {
        const size_t start = latin1_pos;
        const char32_t latin1 = DecodeUtf8(s, &latin1_pos, InvalidByte::kAsLatin1);
        const char32_t flagged = DecodeUtf8(s, &flagged_pos, InvalidByte::kFlagged);
        ASSERT_EQ(latin1_pos, flagged_pos) << first << " " << second;
        const auto b = static_cast<uint8_t>(s[start]);
        const bool invalid_byte = latin1_pos - start == 1 && b >= 0x80;
        ASSERT_EQ(flagged, invalid_byte ? (kInvalidByteFlag | latin1) : latin1)
            << first << " " << second;
      }
    }
  }
}

TEST(Utf8, SequenceStartBeforeStepsBackOverContinuationBytes) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a, é, €, 😀
  EXPECT_EQ(Utf8SequenceStartBefore(s, 1), 0u);
  EXPECT_EQ(Utf8SequenceStartBefore(s, 3), 1u);
  EXPECT_EQ(Utf8SequenceStartBefore(s, 6), 3u);
  EXPECT_EQ(Utf8SequenceStartBefore(s, 10), 6u);
  EXPECT_EQ(Utf8SequenceStartBefore(s, 9), 6u);           // inside a sequence: back to its lead
  EXPECT_EQ(Utf8SequenceStartBefore("\x80\x80", 2), 0u);  // never before 0
}

TEST(Utf8, LossyMatchesRustFromUtf8Lossy) {
  // Expected strings from the Unicode standard's "maximal subpart" rule (ch. 3, U+FFFD
  // substitution), which Rust's String::from_utf8_lossy follows.
  const std::string r = kReplacement;
  EXPECT_EQ(ReplaceInvalidUtf8("a\xC3"), "a" + r);
  EXPECT_EQ(ReplaceInvalidUtf8("\xF0\x9F\x98"), r);          // truncated 4-byte sequence: one
  EXPECT_EQ(ReplaceInvalidUtf8("\xE0\x80\x80"), r + r + r);  // overlong: each byte
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80z"), r + r + r + "z");  // surrogate: each byte
  EXPECT_EQ(ReplaceInvalidUtf8("\xFF\xF0\x9F\x98\x80"), r + "\xF0\x9F\x98\x80");
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));
}

}  // namespace
}  // namespace proctor
