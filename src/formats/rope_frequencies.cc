// Rotary inverse frequencies as Hugging Face computes them (see rope_frequencies.h).
#include "formats/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/error.h"

namespace proctor {
namespace {

// torch evaluates `python_scalar / f32_tensor` as reciprocal(tensor) * f32(scalar).
float TorchScalarDivide(double numerator, float x) {
  return (1.0f / x) * static_cast<float>(numerator);
}

// base ** (arange(0, dim, 2).float() / dim) in f32: the exponent is an f32 quotient, the power
// is rounded once to f32.
std::vector<float> PositionFrequencies(double base, int dim) {
  std::vector<float> out;
  const float base_f = static_cast<float>(base);
  for (int i = 0; i < dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(dim);
    out.push_back(
        static_cast<float>(std::pow(static_cast<double>(base_f), static_cast<double>(exponent))));
  }
  return out;
}

std::vector<float> DefaultInvFreq(double base, int dim) {
  std::vector<float> inv = PositionFrequencies(base, dim);
  for (float& v : inv) v = TorchScalarDivide(1.0, v);
  return inv;
}

double RequireFactor(const RopeParameters& rope) {
  if (!rope.factor) {
    Fail("model", "rope_type '{}' needs rope_parameters.factor, which the config does not give",
         RopeTypeName(rope.type));
  }
  if (!(*rope.factor > 0.0)) {
    Fail("model", "rope_parameters.factor must be > 0 (seen {})", *rope.factor);
  }
  return *rope.factor;
}

void ApplyLlama3Scaling(const RopeParameters& rope, std::vector<float>& inv_freq) {
  const double factor = RequireFactor(rope);
  if (!rope.original_max_position_embeddings) {
    Fail("model", "rope_type 'llama3' needs original_max_position_embeddings");
  }
  const double old_context = static_cast<double>(*rope.original_max_position_embeddings);
  if (rope.high_freq_factor == rope.low_freq_factor) {
    Fail("model", "llama3 rope: high_freq_factor equals low_freq_factor ({})",
         rope.low_freq_factor);
  }
  const float low_freq_wavelen = static_cast<float>(old_context / rope.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(old_context / rope.high_freq_factor);
  const float factor_f = static_cast<float>(factor);
  const float low_f = static_cast<float>(rope.low_freq_factor);
  const float span_f = static_cast<float>(rope.high_freq_factor - rope.low_freq_factor);
  for (float& inv : inv_freq) {
    const float wavelen = TorchScalarDivide(2.0 * std::numbers::pi, inv);
    float llama = wavelen > low_freq_wavelen ? inv / factor_f : inv;
    const float smooth = (TorchScalarDivide(old_context, wavelen) - low_f) / span_f;
    const float smoothed = (1.0f - smooth) * llama / factor_f + smooth * llama;
    const bool is_medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (is_medium) llama = smoothed;
    inv = llama;
  }
}

double YarnMscale(double scale, double mscale) {
  if (scale <= 1.0) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

RopeFrequencies Yarn(const RopeParameters& rope, int dim, int64_t max_position_embeddings) {
  const double base = rope.theta;
  const double original =
      static_cast<double>(rope.original_max_position_embeddings.value_or(max_position_embeddings));
  if (original <= 0) Fail("model", "yarn rope: original_max_position_embeddings must be > 0");
  const double factor =
      rope.factor ? *rope.factor : static_cast<double>(max_position_embeddings) / original;
  if (!(factor > 0.0)) Fail("model", "yarn rope: factor must be > 0 (seen {})", factor);

  double attention_factor;
  if (rope.attention_factor) {
    attention_factor = *rope.attention_factor;
  } else if (rope.mscale && rope.mscale_all_dim && *rope.mscale != 0.0 &&
             *rope.mscale_all_dim != 0.0) {
    attention_factor = YarnMscale(factor, *rope.mscale) / YarnMscale(factor, *rope.mscale_all_dim);
  } else {
    attention_factor = YarnMscale(factor, 1.0);
  }
  // HF: `beta_fast = get("beta_fast") or 32` (a zero also falls back).
  const double beta_fast = rope.beta_fast.value_or(0.0) != 0.0 ? *rope.beta_fast : 32.0;
  const double beta_slow = rope.beta_slow.value_or(0.0) != 0.0 ? *rope.beta_slow : 1.0;

  auto correction_dim = [&](double rotations) {
    return (dim * std::log(original / (rotations * 2.0 * std::numbers::pi))) /
           (2.0 * std::log(base));
  };
  double low = correction_dim(beta_fast);
  double high = correction_dim(beta_slow);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // HF: prevent a singular ramp

  const std::vector<float> pos_freqs = PositionFrequencies(base, dim);
  const float factor_f = static_cast<float>(factor);
  const float low_f = static_cast<float>(low);
  const float width_f = static_cast<float>(high - low);
  RopeFrequencies out;
  out.rotary_dim = dim;
  out.attention_scaling = static_cast<float>(attention_factor);
  for (size_t i = 0; i < pos_freqs.size(); ++i) {
    const float extrapolation = TorchScalarDivide(1.0, pos_freqs[i]);
    const float interpolation = TorchScalarDivide(1.0, factor_f * pos_freqs[i]);
    const float ramp = std::clamp((static_cast<float>(i) - low_f) / width_f, 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    out.inv_freq.push_back(interpolation * (1.0f - extrapolation_factor) +
                           extrapolation * extrapolation_factor);
  }
  return out;
}

}  // namespace

std::optional<RopeType> ParseRopeType(std::string_view name) {
  if (name == "default") return RopeType::kDefault;
  if (name == "linear") return RopeType::kLinear;
  if (name == "dynamic") return RopeType::kDynamic;
  if (name == "yarn") return RopeType::kYarn;
  if (name == "llama3") return RopeType::kLlama3;
  return std::nullopt;
}

std::string_view RopeTypeName(RopeType type) {
  switch (type) {
    case RopeType::kDefault:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kDynamic:
      return "dynamic";
    case RopeType::kYarn:
      return "yarn";
    case RopeType::kLlama3:
      return "llama3";
  }
  return "?";
}

RopeFrequencies ComputeRopeFrequencies(const RopeParameters& rope, int head_dim,
                                       int64_t max_position_embeddings) {
  if (!(rope.theta > 0.0)) Fail("model", "rope_theta must be > 0 (seen {})", rope.theta);
  const int dim = rope.rotary_dim.value_or(static_cast<int>(head_dim * rope.partial_rotary_factor));
  if (dim < 2 || dim > head_dim) {
    Fail("model", "rotary dimension {} (head_dim {} x partial_rotary_factor {}) is out of range",
         dim, head_dim, rope.partial_rotary_factor);
  }
  if (rope.type == RopeType::kYarn) return Yarn(rope, dim, max_position_embeddings);

  RopeFrequencies out;
  out.rotary_dim = dim;
  switch (rope.type) {
    case RopeType::kDefault:
      out.inv_freq = DefaultInvFreq(rope.theta, dim);
      break;
    case RopeType::kLinear: {
      const float factor = static_cast<float>(RequireFactor(rope));
      out.inv_freq = DefaultInvFreq(rope.theta, dim);
      for (float& v : out.inv_freq) v /= factor;
      break;
    }
    case RopeType::kDynamic: {
      // At init HF uses seq_len = max_position_embeddings, where the base is unchanged.
      const double factor = RequireFactor(rope);
      const double seq_len = static_cast<double>(max_position_embeddings);
      const double ratio =
          factor * seq_len / static_cast<double>(max_position_embeddings) - (factor - 1.0);
      const double base = rope.theta * std::pow(ratio, static_cast<double>(dim) / (dim - 2));
      out.inv_freq = DefaultInvFreq(base, dim);
      break;
    }
    case RopeType::kLlama3:
      out.inv_freq = DefaultInvFreq(rope.theta, dim);
      ApplyLlama3Scaling(rope, out.inv_freq);
      break;
    case RopeType::kYarn:
      break;  // handled above
  }
  return out;
}

}  // namespace proctor
