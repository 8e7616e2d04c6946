#include "eval/demo/demo_teacher.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "text/tokenizer/bpe_trainer.h"
#include "text/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file.h"
#include "util/half.h"
#include "util/seeded_random.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "demo";

// Uniform in [-1, 1).
double Uniform(uint64_t& state) {
  return static_cast<double>(SplitMix64(state) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// A row-major matrix of doubles.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> values;  // [rows, cols]

  Matrix(int64_t r, int64_t c) : rows(r), cols(c), values(static_cast<size_t>(r * c), 0.0) {}
  double* Row(int64_t r) { return values.data() + r * cols; }
  const double* Row(int64_t r) const { return values.data() + r * cols; }
};

// a [n, k] x b [k, m] -> [n, m]; each output row is summed by one thread in k order, so the
// result does not depend on the thread count.
Matrix Multiply(const Matrix& a, const Matrix& b) {
  CHECK(a.cols == b.rows);
  Matrix out(a.rows, b.cols);
  ThreadPool::Global().ParallelFor(static_cast<size_t>(a.rows), [&](size_t begin, size_t end, int) {
    for (size_t i = begin; i < end; ++i) {
      double* o = out.Row(static_cast<int64_t>(i));
      const double* ai = a.Row(static_cast<int64_t>(i));
      for (int64_t k = 0; k < a.cols; ++k) {
        const double s = ai[k];
        const double* bk = b.Row(k);
        for (int64_t j = 0; j < b.cols; ++j) o[j] += s * bk[j];
      }
    }
  });
  return out;
}

Matrix Transpose(const Matrix& a) {
  Matrix t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t j = 0; j < a.cols; ++j) t.Row(j)[i] = a.Row(i)[j];
  }
  return t;
}

// Orthonormalizes the rows of m in order (modified Gram-Schmidt, twice for stability).
void OrthonormalizeRows(Matrix& m) {
  for (int64_t i = 0; i < m.rows; ++i) {
    double* v = m.Row(i);
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t p = 0; p < i; ++p) {
        const double* u = m.Row(p);
        double dot = 0;
        for (int64_t j = 0; j < m.cols; ++j) dot += u[j] * v[j];
        for (int64_t j = 0; j < m.cols; ++j) v[j] -= dot * u[j];
      }
    }
    double norm = 0;
    for (int64_t j = 0; j < m.cols; ++j) norm += v[j] * v[j];
    norm = std::sqrt(norm);
    CHECK_MSG(norm > 1e-12, "subspace iteration lost rank at row {}", i);
    for (int64_t j = 0; j < m.cols; ++j) v[j] /= norm;
  }
}

// The bigram log-probabilities of `sequences`, [vocab, vocab]: log(count(a, b) / count(a)),
// floored at `floor` (unseen pairs); a token never followed by another uses the unigram
// distribution (add-one). Real LMs' logits look like this: a few next tokens far above a flat
// bulk. Also returns the table's perplexity on the pairs it was counted from.
Matrix BigramLogProbs(const std::vector<std::vector<int32_t>>& sequences, int vocab, double floor,
                      double unigram_weight, int64_t* pairs, double* perplexity) {
  Matrix counts(vocab, vocab);
  std::vector<double> row_totals(static_cast<size_t>(vocab), 0.0);
  std::vector<double> unigram(static_cast<size_t>(vocab), 1.0);  // add-one
  double unigram_total = vocab;
  *pairs = 0;
  for (const auto& seq : sequences) {
    for (size_t i = 0; i + 1 < seq.size(); ++i) {
      counts.Row(seq[i])[seq[i + 1]] += 1;
      row_totals[seq[i]] += 1;
      unigram[seq[i + 1]] += 1;
      unigram_total += 1;
      ++*pairs;
    }
  }
  double mean_log_unigram = 0;
  for (int b = 0; b < vocab; ++b) mean_log_unigram += std::log(unigram[b] / unigram_total) / vocab;
  Matrix log_probs(vocab, vocab);
  for (int a = 0; a < vocab; ++a) {
    for (int b = 0; b < vocab; ++b) {
      if (row_totals[a] == 0) {
        log_probs.Row(a)[b] = std::max(floor, std::log(unigram[b] / unigram_total));
      } else if (counts.Row(a)[b] == 0) {
        log_probs.Row(a)[b] = floor;
      } else {
        const double tilt =
            unigram_weight * (std::log(unigram[b] / unigram_total) - mean_log_unigram);
        log_probs.Row(a)[b] = std::max(floor, std::log(counts.Row(a)[b] / row_totals[a]) + tilt);
      }
    }
  }
  double nll = 0;
  for (const auto& seq : sequences) {
    for (size_t i = 0; i + 1 < seq.size(); ++i) {
      const double* row = log_probs.Row(seq[i]);
      double sum = 0;  // the floored row is renormalized by the softmax
      for (int b = 0; b < vocab; ++b) sum += std::exp(row[b]);
      nll -= row[seq[i + 1]] - std::log(sum);
    }
  }
  *perplexity = *pairs > 0 ? std::exp(nll / static_cast<double>(*pairs)) : 0.0;
  return log_probs;
}

// Storage for one bf16 tensor of the safetensors file.
struct Bf16Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint16_t> values;
};

// Writes bf16 tensors as a safetensors file (u64 header length, JSON header padded with spaces
// to a multiple of 8, the data in order), atomically. (Until the model layer's streaming
// safetensors writer lands with `proctor quantize`.)
void WriteBf16Safetensors(const std::filesystem::path& path,
                          const std::vector<Bf16Tensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = t.values.size() * 2;
    header[t.name] = {
        {"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t{text.size()} >> (8 * i));
  AtomicFileWriter out(path);
  out.Write(std::span<const uint8_t>(length, 8));
  out.Write(text);
  for (const auto& t : tensors) {
    out.Write(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(t.values.data()),
                                       t.values.size() * 2));
  }
  out.Commit();
}

}  // namespace

DemoTeacherInfo WriteDemoTeacher(const std::filesystem::path& dir,
                                 std::span<const std::string_view> texts,
                                 const DemoTeacherOptions& o) {
  if (texts.empty()) Fail(kComponent, "the demo teacher needs training texts; none were given");
  if (o.hidden_size < 8 || o.num_layers < 1 || o.num_heads < 1 || o.num_kv_heads < 1 ||
      o.hidden_size % o.num_heads != 0 || o.num_heads % o.num_kv_heads != 0 ||
      (o.hidden_size / o.num_heads) % 2 != 0 || o.intermediate_size < 1 ||
      o.vocab_size < o.hidden_size) {
    Fail(kComponent, "invalid demo teacher shape: hidden {} layers {} heads {}/{} ff {} vocab {}",
         o.hidden_size, o.num_layers, o.num_heads, o.num_kv_heads, o.intermediate_size,
         o.vocab_size);
  }
  std::filesystem::create_directories(dir);
  DemoTeacherInfo info;
  info.dir = dir;

  // 1. The tokenizer.
  std::string all_text;
  for (const auto t : texts) all_text.append(t);
  const text::ByteLevelBpe bpe = text::TrainByteLevelBpe(all_text, {.vocab_size = o.vocab_size});
  const std::string tokenizer_json = text::ByteLevelBpeTokenizerJson(bpe);
  const std::string tokenizer_config = text::ByteLevelBpeTokenizerConfigJson(bpe);
  WriteFileAtomic(dir / "tokenizer.json", tokenizer_json);
  WriteFileAtomic(dir / "tokenizer_config.json", tokenizer_config);
  info.tokenizer_vocab = static_cast<int64_t>(bpe.tokens.size());
  const auto tokenizer =
      text::LoadHfTokenizer(tokenizer_json, tokenizer_config, (dir / "tokenizer.json").string());

  // 2. The bigram table and its rank-`hidden` factorization L ~= Q^T B (Q rows orthonormal).
  std::vector<std::vector<int32_t>> sequences;
  for (const auto t : texts) sequences.push_back(tokenizer->Encode(t, true));
  const int vocab = o.vocab_size;
  const int hidden = o.hidden_size;
  Matrix log_probs = BigramLogProbs(sequences, vocab, o.log_prob_floor, o.unigram_weight,
                                    &info.training_tokens, &info.bigram_perplexity);
  for (int a = 0; a < vocab; ++a) {
    double mean = 0;
    for (int b = 0; b < vocab; ++b) mean += log_probs.Row(a)[b];
    mean /= vocab;
    for (int b = 0; b < vocab; ++b) log_probs.Row(a)[b] -= mean;
  }
  const Matrix log_probs_t = Transpose(log_probs);
  Matrix basis(hidden, vocab);  // Q^T [hidden, vocab]
  uint64_t state = HashName("subspace", o.seed);
  for (double& v : basis.values) v = Uniform(state);
  OrthonormalizeRows(basis);
  for (int it = 0; it < o.subspace_iterations; ++it) {
    // Q <- orth(L L^T Q), on the transposes: Q^T <- orth((Q^T L) L^T).
    basis = Multiply(Multiply(basis, log_probs), log_probs_t);
    OrthonormalizeRows(basis);
  }
  const Matrix coefficients = Multiply(basis, log_probs);  // B = Q^T L [hidden, vocab]

  // 3. The weights.
  std::vector<Bf16Tensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape, auto&& value_at) {
    Bf16Tensor t{std::move(name), std::move(shape), {}};
    const int64_t rows = t.shape[0], cols = t.shape.size() > 1 ? t.shape[1] : 1;
    t.values.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        t.values[static_cast<size_t>(r * cols + c)] = F32ToBF16(static_cast<float>(value_at(r, c)));
      }
    }
    info.parameters += rows * cols;
    tensors.push_back(std::move(t));
  };
  auto random_matrix = [&](const std::string& name, int64_t out, int64_t in, double scale) {
    const double amplitude = scale * std::sqrt(3.0 / static_cast<double>(in));
    uint64_t s = HashName(name, o.seed);
    add(name, {out, in}, [&](int64_t, int64_t) { return amplitude * Uniform(s); });
  };
  auto ones = [&](const std::string& name, int64_t n) {
    add(name, {n}, [](int64_t, int64_t) { return 1.0; });
  };
  const double embed_scale = std::sqrt(static_cast<double>(vocab));  // rows of rms ~1
  add("model.embed_tokens.weight", {vocab, hidden},
      [&](int64_t a, int64_t k) { return basis.Row(k)[a] * embed_scale; });
  const int head_dim = hidden / o.num_heads;
  const int64_t q_dim = int64_t{o.num_heads} * head_dim,
                kv_dim = int64_t{o.num_kv_heads} * head_dim;
  for (int i = 0; i < o.num_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    ones(p + "input_layernorm.weight", hidden);
    random_matrix(p + "self_attn.q_proj.weight", q_dim, hidden, 1.0);
    random_matrix(p + "self_attn.k_proj.weight", kv_dim, hidden, 1.0);
    random_matrix(p + "self_attn.v_proj.weight", kv_dim, hidden, 1.0);
    random_matrix(p + "self_attn.o_proj.weight", hidden, q_dim, o.residual_scale);
    ones(p + "post_attention_layernorm.weight", hidden);
    random_matrix(p + "mlp.gate_proj.weight", o.intermediate_size, hidden, 1.0);
    random_matrix(p + "mlp.up_proj.weight", o.intermediate_size, hidden, 1.0);
    random_matrix(p + "mlp.down_proj.weight", hidden, o.intermediate_size, o.residual_scale);
  }
  ones("model.norm.weight", hidden);
  // logits = (h / rms(h)) . lm_head[b]; with h = embedding row a this is
  // L[a][b] * (1 / (sqrt(vocab) * rms(Q[a]))), 1 on average over a (Q's rows have mean square
  // 1 / vocab).
  const double head_scale = o.logit_scale / std::sqrt(static_cast<double>(vocab));
  add("lm_head.weight", {vocab, hidden},
      [&](int64_t b, int64_t k) { return coefficients.Row(k)[b] * head_scale; });

  WriteBf16Safetensors(dir / "model.safetensors", tensors);

  nlohmann::ordered_json config;
  config["architectures"] = {"LlamaForCausalLM"};
  config["model_type"] = "llama";
  config["hidden_size"] = hidden;
  config["intermediate_size"] = o.intermediate_size;
  config["num_hidden_layers"] = o.num_layers;
  config["num_attention_heads"] = o.num_heads;
  config["num_key_value_heads"] = o.num_kv_heads;
  config["head_dim"] = head_dim;
  config["vocab_size"] = vocab;
  config["max_position_embeddings"] = o.max_position_embeddings;
  config["rms_norm_eps"] = 1e-5;
  config["rope_theta"] = 10000.0;
  config["hidden_act"] = "silu";
  config["attention_bias"] = false;
  config["mlp_bias"] = false;
  config["tie_word_embeddings"] = false;
  config["bos_token_id"] = 0;
  config["eos_token_id"] = 1;
  config["torch_dtype"] = "bfloat16";
  config["proctor_demo_teacher"] = {{"seed", o.seed},
                                    {"log_prob_floor", o.log_prob_floor},
                                    {"unigram_weight", o.unigram_weight},
                                    {"residual_scale", o.residual_scale},
                                    {"logit_scale", o.logit_scale},
                                    {"bigram_perplexity", info.bigram_perplexity}};
  WriteFileAtomic(dir / "config.json", config.dump(2) + "\n");
  info.summary = fmt::format(
      "llama, {} layers, dim {}, {}/{} heads, ff {}, vocab {} ({} trained BPE tokens), {:.2f}M "
      "parameters in bf16",
      o.num_layers, hidden, o.num_heads, o.num_kv_heads, o.intermediate_size, vocab,
      info.tokenizer_vocab, static_cast<double>(info.parameters) / 1e6);
  return info;
}

}  // namespace proctor
