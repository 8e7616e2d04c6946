#include "model/gguf_recipe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace proctor {
namespace {

enum class Category {
  kOutput,
  kTokenEmbd,
  kAttnV,  // attn_v, attn_qkv, attn_kv_b
  kAttnK,
  kAttnOutput,
  kFfnDown,
  kOther,
};

bool Has(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

Category CategoryOf(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::kTokenEmbd;
  }
  if (Has(name, "attn_qkv.weight") || Has(name, "attn_kv_b.weight") || Has(name, "attn_v.weight")) {
    return Category::kAttnV;
  }
  if (Has(name, "attn_k.weight")) return Category::kAttnK;
  if (Has(name, "attn_output.weight")) return Category::kAttnOutput;
  if (Has(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// llama.cpp's tensor_allows_quantization, for the tensors of the families it writes.
bool Quantizable(const GgufTensorPlan& t) {
  if (t.dims.size() < 2) return false;
  const std::string_view name = t.name;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  for (const std::string_view never : {"_norm.weight",
                                       "ffn_gate_inp.weight",
                                       "ffn_gate_tid2eid.weight",
                                       "altup",
                                       "laurel",
                                       "per_layer_model_proj",
                                       "ssm_conv1d",
                                       "shortconv.conv.weight",
                                       "indexer.k_proj.weight",
                                       "indexer.q_proj.weight",
                                       "time_mix_",
                                       "attn_rel_b.weight",
                                       ".position_embd",
                                       "sam.pos_embd",
                                       "sam.neck.",
                                       "sam.net_",
                                       ".rel_pos",
                                       ".patch_embd",
                                       ".patch_merger",
                                       "a.rvq.codebook",
                                       "mm.a.code_embd"}) {
    if (Has(name, never)) return false;
  }
  return name != "position_embd.weight" && name != "token_types.weight";
}

bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool Fits(DType type, const GgufTensorPlan& t) { return FitsBlocks(type, t.dims[0]); }

DType Fallback(DType type, const GgufTensorPlan& t) {
  if (Fits(type, t)) return type;
  DType demoted = type;
  switch (type) {
    case DType::kQ4_K:
      demoted = DType::kQ5_0;
      break;
    case DType::kQ5_K:
      demoted = DType::kQ5_1;
      break;
    case DType::kQ6_K:
      demoted = DType::kQ8_0;
      break;
    default:
      break;
  }
  return Fits(demoted, t) ? demoted : DType::kF16;
}

struct Counters {
  int attn_v_seen = 0;
  int attn_v_total = 0;
  int ffn_down_seen = 0;
};

// llama.cpp's llama_tensor_get_type_impl for the file types above; `why` says what changed.
DType MixedType(const GgufFileType& ft, const GgufModelFacts& facts, bool tied, Counters& c,
                const GgufTensorPlan& t, std::string* why) {
  const std::string_view f = ft.name;
  const bool k_m = f == "q4_k_m" || f == "q5_k_m";
  DType type = ft.base;
  const Category category = CategoryOf(t.name);
  if (category == Category::kOutput || (tied && category == Category::kTokenEmbd)) {
    if (!Fits(ft.base, t)) {
      type = DType::kQ8_0;
    } else if (ft.base != DType::kQ8_0) {
      type = DType::kQ6_K;
    }
    *why = category == Category::kOutput ? "output" : "tied output";
  } else if (category == Category::kAttnV) {
    const int i = c.attn_v_seen++;
    if (k_m && UseMoreBits(i, c.attn_v_total)) {
      type = DType::kQ6_K;
      *why = fmt::format("attn_v {} of {}: use_more_bits", i, c.attn_v_total);
    } else if (f == "q4_k_s" && i < 4) {
      type = DType::kQ5_K;
      *why = fmt::format("attn_v {} < 4", i);
    }
    const bool llama_70b =
        facts.architecture == "llama" && facts.n_layer == 80 && facts.n_head != facts.n_head_kv;
    if (llama_70b && (type == DType::kQ3_K || type == DType::kQ4_K)) {
      type = DType::kQ5_K;
      *why = "70B attn_v";
    }
    if (facts.n_expert == 8) {
      type = DType::kQ8_0;
      *why = "8 experts";
    }
  } else if (category == Category::kAttnK) {
    if (facts.n_expert == 8) {
      type = DType::kQ8_0;
      *why = "8 experts";
    }
  } else if (category == Category::kFfnDown) {
    int layer = c.ffn_down_seen++;
    if (facts.n_expert > 1) layer = GgufLayerOf(t.name);
    const int n = facts.n_layer;
    if (k_m && UseMoreBits(layer, n)) {
      type = DType::kQ6_K;
      *why = fmt::format("ffn_down layer {} of {}: use_more_bits", layer, n);
    } else if (f == "q4_k_s" && layer < n / 8) {
      type = DType::kQ5_K;
      *why = fmt::format("ffn_down layer {} < {}/8", layer, n);
    }
  } else if (category == Category::kAttnOutput) {
    if (facts.n_expert == 8 && (f == "q4_k_s" || f == "q4_k_m")) {
      type = DType::kQ5_K;
      *why = "8 experts";
    }
  }
  return type;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

const std::vector<GgufFileType>& GgufFileTypes() {
  static const std::vector<GgufFileType> kTypes = {
      {"f32", 0, DType::kF32},      {"f16", 1, DType::kF16},      {"bf16", 32, DType::kBF16},
      {"q8_0", 7, DType::kQ8_0},    {"q4_0", 2, DType::kQ4_0},    {"q4_1", 3, DType::kQ4_1},
      {"q5_0", 8, DType::kQ5_0},    {"q5_1", 9, DType::kQ5_1},    {"q4_k_s", 14, DType::kQ4_K},
      {"q4_k_m", 15, DType::kQ4_K}, {"q5_k_s", 16, DType::kQ5_K}, {"q5_k_m", 17, DType::kQ5_K},
      {"q6_k", 18, DType::kQ6_K},
  };
  return kTypes;
}

std::optional<GgufFileType> FindGgufFileType(std::string_view name) {
  const std::string lower = Lower(name);
  for (const GgufFileType& t : GgufFileTypes()) {
    if (t.name == lower) return t;
  }
  return std::nullopt;
}

std::string GgufFileTypeNames() {
  std::string names;
  for (const GgufFileType& t : GgufFileTypes()) {
    names += names.empty() ? "" : ", ";
    names += t.name;
  }
  return names;
}

int GgufLayerOf(std::string_view tensor_name) {
  if (tensor_name.substr(0, 4) != "blk.") return -1;
  const std::string_view rest = tensor_name.substr(4);
  int layer = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.') {
    return -1;
  }
  return layer;
}

void SortLikeLlamaCpp(std::vector<GgufTensorPlan>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const GgufTensorPlan& a, const GgufTensorPlan& b) {
                     const int la = GgufLayerOf(a.name), lb = GgufLayerOf(b.name);
                     if (la != lb) return la < lb;
                     return a.name < b.name;
                   });
}

void PlanGgufTensorTypes(const GgufFileType& file_type, const GgufModelFacts& facts, bool pure,
                         std::vector<GgufTensorPlan>& tensors) {
  Counters counters;
  bool tied = true;
  for (const GgufTensorPlan& t : tensors) {
    if (CategoryOf(t.name) == Category::kAttnV) ++counters.attn_v_total;
    if (CategoryOf(t.name) == Category::kOutput) tied = false;
  }
  const bool quantized_base = Info(file_type.base).block_elems > 1;
  for (GgufTensorPlan& t : tensors) {
    t.why.clear();
    if (!Quantizable(t)) {
      t.type = t.stored;
      continue;
    }
    if (!quantized_base) {
      t.type = file_type.base;
      continue;
    }
    const DType chosen =
        pure ? file_type.base : MixedType(file_type, facts, tied, counters, t, &t.why);
    t.type = Fallback(chosen, t);
    if (t.type != chosen) {
      t.why += fmt::format("{}rows of {} are not whole {} blocks", t.why.empty() ? "" : "; ",
                           t.dims[0], Name(chosen));
    }
  }
}

}  // namespace proctor
