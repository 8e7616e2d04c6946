// The gated delta rule's fast forms (ops/delta_rule.h) on every Highway target this build compiled
// and this CPU supports, against the recurrence summed in double (DeltaRuleRef): token counts
// below, at and across the chunk size, head widths that are and are not whole vectors, a nonzero
// starting state, strided rows as the mixer passes them, and the output written over v.
#include "ops/delta_rule.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace proctor::ops {
namespace {

// Rows as the mixer lays them out: q, k, v of token t in one row of `stride` floats.
struct Inputs {
  int64_t tokens, dk, dv, stride;
  std::vector<float> rows, beta, g, state;
  DeltaRuleHead Head() const {
    DeltaRuleHead head;
    head.tokens = tokens;
    head.dk = dk;
    head.dv = dv;
    head.q = rows.data();
    head.k = rows.data() + dk;
    head.qk_stride = stride;
    head.v = rows.data() + 2 * dk;
    head.v_stride = stride;
    head.beta = beta.data();
    head.g = g.data();
    head.gate_stride = 1;
    return head;
  }
};

// Unit-length keys, queries of length 1/sqrt(dk), beta in (0, 1), log decays in [-3, 0) (strong
// decays make exp(c) of a chunk's cumulative sum small, as real gates do).
Inputs RandomInputs(int64_t tokens, int64_t dk, int64_t dv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Inputs in{tokens, dk, dv, 2 * dk + dv + 3, {}, {}, {}, {}};
  in.rows.resize(static_cast<size_t>(tokens * in.stride));
  for (float& x : in.rows) x = normal(rng);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t part = 0; part < 2; ++part) {
      float* x = in.rows.data() + t * in.stride + part * dk;
      double sum = 0;
      for (int64_t d = 0; d < dk; ++d) sum += static_cast<double>(x[d]) * x[d];
      const double length = part == 0 ? std::sqrt(sum * dk) : std::sqrt(sum);
      for (int64_t d = 0; d < dk; ++d) x[d] = static_cast<float>(x[d] / length);
    }
    in.beta.push_back(0.05f + 0.9f * unit(rng));
    in.g.push_back(-0.001f - 3.0f * unit(rng) * unit(rng));
  }
  in.state.resize(static_cast<size_t>(dk * dv));
  for (float& x : in.state) x = 0.3f * normal(rng);
  return in;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " " << i;
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) /
                                (1.0 + std::fabs(static_cast<double>(want[i]))));
  }
  EXPECT_LT(worst, 5e-6) << what;
}

class DeltaRuleEveryTarget : public ::testing::Test {
 protected:
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_F(DeltaRuleEveryTarget, RecurrentAndChunkedMatchTheRecurrenceInDouble) {
  struct Shape {
    int64_t dk, dv;
  };
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (const Shape shape : {Shape{16, 16}, Shape{12, 20}, Shape{128, 128}, Shape{8, 40}}) {
      for (int64_t tokens : {1, 2, 5, 63, 64, 65, 150}) {
        SCOPED_TRACE(testing::Message()
                     << "dk=" << shape.dk << " dv=" << shape.dv << " tokens=" << tokens);
        const Inputs in =
            RandomInputs(tokens, shape.dk, shape.dv, 7u + static_cast<uint32_t>(tokens));
        const int64_t dv = shape.dv;
        std::vector<float> want_out(static_cast<size_t>(tokens * dv)), want_state = in.state;
        DeltaRuleRef(in.Head(), want_state.data(), want_out.data(), dv);

        std::vector<float> out(want_out.size()), state = in.state;
        DeltaRuleRecurrent(in.Head(), state.data(), out.data(), dv);
        ExpectNear(out, want_out, "recurrent output");
        ExpectNear(state, want_state, "recurrent state");

        DeltaRuleScratch scratch;
        state = in.state;
        std::fill(out.begin(), out.end(), 0.0f);
        DeltaRuleChunked(in.Head(), state.data(), out.data(), dv, scratch);
        ExpectNear(out, want_out, "chunked output");
        ExpectNear(state, want_state, "chunked state");
      }
    }
  }
}

// The mixer writes each head's output over its v columns; prefill then decode share the state.
TEST_F(DeltaRuleEveryTarget, OutputOverVAndChunkedThenRecurrentContinue) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    const int64_t tokens = 100, prefill = 70, dk = 32, dv = 24;
    const Inputs in = RandomInputs(tokens, dk, dv, 99);
    std::vector<float> want_out(static_cast<size_t>(tokens * dv)), want_state = in.state;
    DeltaRuleRef(in.Head(), want_state.data(), want_out.data(), dv);

    Inputs run = in;  // outputs land in run.rows' v columns
    DeltaRuleHead head = run.Head();
    float* v = run.rows.data() + 2 * dk;
    DeltaRuleScratch scratch;
    head.tokens = prefill;
    DeltaRuleChunked(head, run.state.data(), v, run.stride, scratch);
    for (int64_t t = prefill; t < tokens; ++t) {  // decode: one token per call
      DeltaRuleHead step = run.Head();
      step.tokens = 1;
      step.q += t * run.stride;
      step.k += t * run.stride;
      step.v += t * run.stride;
      step.beta += t;
      step.g += t;
      DeltaRuleRecurrent(step, run.state.data(), v + t * run.stride, run.stride);
    }
    std::vector<float> out;
    for (int64_t t = 0; t < tokens; ++t)
      out.insert(out.end(), v + t * run.stride, v + t * run.stride + dv);
    ExpectNear(out, want_out, "output over v");
    ExpectNear(run.state, want_state, "state");
  }
}

// Strong decays underflow a chunk's exp(c) (cumulative log decay below -87 within 64 tokens) to 0,
// as in transformers' chunked form: what it scales is that small, so outputs still match.
TEST_F(DeltaRuleEveryTarget, StrongDecaysStayFinite) {
  Inputs in = RandomInputs(130, 16, 16, 5);
  for (float& g : in.g) g = -9.0f;
  std::vector<float> out(static_cast<size_t>(130 * 16)), state = in.state;
  DeltaRuleScratch scratch;
  DeltaRuleChunked(in.Head(), state.data(), out.data(), 16, scratch);
  std::vector<float> want_out(out.size()), want_state = in.state;
  DeltaRuleRef(in.Head(), want_state.data(), want_out.data(), 16);
  ExpectNear(out, want_out, "output");
  ExpectNear(state, want_state, "state");
}

}  // namespace
}  // namespace proctor::ops
