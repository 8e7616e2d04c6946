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
    case DType::kQ2_K:
    case DType::kQ3_K:
      demoted = DType::kQ4_0;
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
  const bool falcon = facts.architecture == "falcon";
  const int n_gqa = facts.n_head_kv > 0 ? facts.n_head / facts.n_head_kv : 0;
  DType type = ft.base;
  auto set = [&](DType to, std::string reason) {
    type = to;
    *why = std::move(reason);
  };
  const Category category = CategoryOf(t.name);
  if (category == Category::kOutput || (tied && category == Category::kTokenEmbd)) {
    const std::string what = category == Category::kOutput ? "output" : "tied output";
    if (falcon || !Fits(ft.base, t)) {
      set(DType::kQ8_0, what);
    } else if (ft.base != DType::kQ8_0) {
      set(DType::kQ6_K, what);
    }
  } else if (category == Category::kAttnV) {
    const int i = c.attn_v_seen++;
    const int n = c.attn_v_total;
    if (f == "q2_k") {
      set(n_gqa >= 4 ? DType::kQ4_K : DType::kQ3_K,
          fmt::format("attn_v, {} query heads per KV head", n_gqa));
    } else if (f == "q3_k_m") {
      set(i < 2 ? DType::kQ5_K : DType::kQ4_K, fmt::format("attn_v {} of {}", i, n));
    } else if (f == "q3_k_l") {
      set(DType::kQ5_K, "attn_v");
    } else if ((f == "q4_k_m" || f == "q5_k_m") && UseMoreBits(i, n)) {
      set(DType::kQ6_K, fmt::format("attn_v {} of {}: use_more_bits", i, n));
    } else if (f == "q4_k_s" && i < 4) {
      set(DType::kQ5_K, fmt::format("attn_v {} < 4", i));
    }
    const bool llama_70b =
        facts.architecture == "llama" && facts.n_layer == 80 && facts.n_head != facts.n_head_kv;
    if (llama_70b && (type == DType::kQ3_K || type == DType::kQ4_K)) {
      set(DType::kQ5_K, "70B attn_v");
    }
    if (facts.n_expert == 8) set(DType::kQ8_0, "attn_v, 8 experts");
  } else if (category == Category::kAttnK) {
    if (facts.n_expert == 8) set(DType::kQ8_0, "attn_k, 8 experts");
  } else if (category == Category::kFfnDown) {
    int i = c.ffn_down_seen++;
    if (facts.n_expert > 1) i = GgufLayerOf(t.name);
    const int n = facts.n_layer;
    const std::string layer = fmt::format("ffn_down layer {} of {}", i, n);
    if (f == "q2_k") {
      set(DType::kQ3_K, "ffn_down");
    } else if (f == "q3_k_m") {
      const DType mid = !falcon || UseMoreBits(i, n) ? DType::kQ4_K : DType::kQ3_K;
      set(i < n / 16 ? DType::kQ5_K : mid, layer);
    } else if (f == "q3_k_l") {
      set(falcon ? DType::kQ4_K : DType::kQ5_K, "ffn_down");
    } else if (f == "q4_k_m" && falcon) {
      const DType rest = UseMoreBits(i, n) ? DType::kQ5_K : DType::kQ4_K;
      set(i < n / 16 ? DType::kQ6_K : rest, layer);
    } else if ((f == "q4_k_m" || f == "q5_k_m") && UseMoreBits(i, n)) {
      set(DType::kQ6_K, layer + ": use_more_bits");
    } else if (f == "q4_k_s" && !falcon && i < n / 8) {
      set(DType::kQ5_K, fmt::format("{} < {}/8", layer, n));
    }
  } else if (category == Category::kAttnOutput) {
    if (falcon) {
      if (f == "q3_k_l") set(DType::kQ4_K, "attn_output");
    } else if (facts.n_expert == 8) {
      if (f == "q2_k" || f == "q3_k_s" || f == "q3_k_m" || f == "q4_k_s" || f == "q4_k_m") {
        set(DType::kQ5_K, "attn_output, 8 experts");
      }
    } else if (f == "q2_k") {
      set(DType::kQ3_K, "attn_output");
    } else if (f == "q3_k_m") {
      set(DType::kQ4_K, "attn_output");
    } else if (f == "q3_k_l") {
      set(DType::kQ5_K, "attn_output");
    }
  }
  if (type == ft.base) why->clear();
  return type;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

const std::vector<GgufFileType>& GgufFileTypes() {
  // clang-format off
  static const std::vector<GgufFileType> kTypes = {
      {"f32", 0, DType::kF32},       {"f16", 1, DType::kF16},       {"bf16", 32, DType::kBF16},
      {"q8_0", 7, DType::kQ8_0},     {"q4_0", 2, DType::kQ4_0},     {"q4_1", 3, DType::kQ4_1},
      {"q5_0", 8, DType::kQ5_0},     {"q5_1", 9, DType::kQ5_1},     {"q2_k", 10, DType::kQ2_K},
      {"q3_k_s", 11, DType::kQ3_K},  {"q3_k_m", 12, DType::kQ3_K},  {"q3_k_l", 13, DType::kQ3_K},
      {"q4_k_s", 14, DType::kQ4_K},  {"q4_k_m", 15, DType::kQ4_K},  {"q5_k_s", 16, DType::kQ5_K},
      {"q5_k_m", 17, DType::kQ5_K},  {"q6_k", 18, DType::kQ6_K},
  };
  // clang-format on
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
