// The full integrity check: a valid dump passes; each kind of damaged record is named.
#include "eval/formats/ref_logits_integrity.h"

#include <gtest/gtest.h>

#include <cstring>

#include "eval/testing_dumps.h"
#include "util/error.h"
#include "util/half.h"

namespace proctor {
namespace {

using testing::TempDir;

class Integrity : public ::testing::Test {
 protected:
  void SetUp() override { testing::TinyCase().WriteDump(temp_.path()); }
  // Overwrites bytes of record `rec` of seq-1.bin at byte offset `at` within the record.
  void Patch(int64_t rec, size_t at, const void* bytes, size_t n) {
    const auto path = temp_.path() / "seq-1.bin";
    std::string data = testing::ReadBytes(path);
    std::memcpy(data.data() + rec * 28 + at, bytes, n);
    testing::WriteBytes(path, data);
  }
  void ExpectProblem(const std::string& fragment) {
    const auto dump = ReferenceLogitsDump::Open(temp_.path());
    try {
      CheckReferenceLogitsIntegrity(dump);
      FAIL() << "expected: " << fragment;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find((temp_.path() / "seq-1.bin").string()), std::string::npos) << what;
      EXPECT_NE(what.find("record 3"), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << what;
    }
  }
  TempDir temp_;
};

TEST_F(Integrity, ValidDumpPasses) {
  const auto report = CheckReferenceLogitsIntegrity(ReferenceLogitsDump::Open(temp_.path()));
  EXPECT_EQ(report.records_checked, 10);
  EXPECT_EQ(report.sequences_checked, 2);
}

TEST_F(Integrity, NegativeIndex) {
  const int32_t bad = -3;
  Patch(3, 4, &bad, 4);
  ExpectProblem("index -3 is negative");
}

TEST_F(Integrity, DuplicateIndex) {
  const std::string data = testing::ReadBytes(temp_.path() / "seq-1.bin");
  int32_t first;
  std::memcpy(&first, data.data() + 3 * 28, 4);
  Patch(3, 8, &first, 4);
  ExpectProblem("appears twice");
}

TEST_F(Integrity, IncreasingLogits) {
  const uint16_t big = F32ToF16(1.0f);  // above the stored top logit 0
  Patch(3, 16 + 2 * 2, &big, 2);
  ExpectProblem("increase at 2");
}

TEST_F(Integrity, NanLogit) {
  const uint16_t nan = 0x7E00;
  Patch(3, 16 + 2 * 1, &nan, 2);
  ExpectProblem("logit 1 is NaN");
}

TEST_F(Integrity, LogsumexpBelowTheTopLogitOrNotFinite) {
  const float below = -0.01f;  // top stored logit is 0; fp16 rounding at 0 is 2^-25
  Patch(3, 24, &below, 4);
  ExpectProblem("is below the top logit");
  const float inf = std::numeric_limits<float>::infinity();
  Patch(3, 24, &inf, 4);
  ExpectProblem("not finite");
}

TEST(HalfF16Spacing, KnownValues) {
  EXPECT_EQ(HalfF16Spacing(1.0f), std::ldexp(1.0, -11));   // spacing 2^-10 in [1, 2)
  EXPECT_EQ(HalfF16Spacing(-16.5f), std::ldexp(1.0, -7));  // spacing 2^-6 in [16, 32)
  EXPECT_EQ(HalfF16Spacing(0.0f), std::ldexp(1.0, -25));
}

}  // namespace
}  // namespace proctor
