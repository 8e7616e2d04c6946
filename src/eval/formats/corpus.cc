#include "eval/formats/corpus.h"

#include <cstring>
#include <limits>

#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "corpus";

int64_t PositiveInt(const nlohmann::json& j, const char* key, const std::filesystem::path& path) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0) {
    Fail(kComponent, "'{}': '{}' must be a positive integer, found {}", path.string(), key,
         j.contains(key) ? j[key].dump() : "nothing");
  }
  return j[key].get<int64_t>();
}

}  // namespace

Corpus ReadCorpus(const std::filesystem::path& dir) {
  Corpus corpus;
  corpus.dir = dir;
  const auto manifest_path = dir / "manifest.json";
  const auto tokens_path = dir / "tokens.bin";
  if (!std::filesystem::exists(manifest_path)) {
    Fail(kComponent, "'{}' is not a corpus directory: no manifest.json", dir.string());
  }
  const auto j = nlohmann::json::parse(ReadFileToString(manifest_path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    Fail(kComponent, "'{}' is not a JSON object", manifest_path.string());
  }
  if (!j.contains("format_version") || j["format_version"] != 1) {
    Fail(kComponent, "'{}': format_version {} is not supported (this reader implements 1)",
         manifest_path.string(),
         j.contains("format_version") ? j["format_version"].dump() : "absent");
  }
  if (!j.contains("kind") || j["kind"] != "kl-eval-corpus") {
    Fail(kComponent, "'{}': kind {} is not \"kl-eval-corpus\"", manifest_path.string(),
         j.contains("kind") ? j["kind"].dump() : "absent");
  }
  corpus.ctx_len = PositiveInt(j, "ctx_len", manifest_path);
  corpus.n_seqs = PositiveInt(j, "n_seqs", manifest_path);
  if (j.contains("vocab_size") && !j["vocab_size"].is_null()) {
    corpus.vocab_size = PositiveInt(j, "vocab_size", manifest_path);
  }
  if (j.contains("tokenizer") && j["tokenizer"].is_string()) {
    corpus.tokenizer = j["tokenizer"].get<std::string>();
  }
  if (j.contains("tokenizer_sha256") && j["tokenizer_sha256"].is_string()) {
    corpus.tokenizer_sha256 = j["tokenizer_sha256"].get<std::string>();
  }
  for (const auto& [key, id] : {std::pair{"bos_id", &corpus.bos_id}, {"eos_id", &corpus.eos_id}}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number_integer()) {
      Fail(kComponent, "'{}': \"{}\" must be an integer, got {}", manifest_path.string(), key,
           j[key].dump());
    }
    *id = j[key].get<int32_t>();
  }
  if (!j.contains("tokens_sha256") || !j["tokens_sha256"].is_string()) {
    Fail(kComponent, "'{}': tokens_sha256 (a hex string) is missing", manifest_path.string());
  }
  corpus.tokens_sha256 = j["tokens_sha256"].get<std::string>();
  if (!std::filesystem::exists(tokens_path)) {
    Fail(kComponent, "'{}' is missing", tokens_path.string());
  }
  // In 128 bits: n_seqs and ctx_len come from the file and their product must not wrap around.
  const unsigned __int128 expected = static_cast<unsigned __int128>(corpus.n_seqs) *
                                     static_cast<unsigned __int128>(corpus.ctx_len) * 4;
  const uint64_t size = std::filesystem::file_size(tokens_path);
  if (static_cast<unsigned __int128>(size) != expected) {
    Fail(kComponent, "'{}' is {} bytes; n_seqs {} x ctx_len {} x 4 needs {}", tokens_path.string(),
         size, corpus.n_seqs, corpus.ctx_len,
         expected > std::numeric_limits<uint64_t>::max()
             ? std::string("more than 2^64")
             : std::to_string(static_cast<uint64_t>(expected)));
  }
  const std::string bytes = ReadFileToString(tokens_path);
  const std::string actual = Sha256Hex(std::string_view(bytes));
  if (actual != corpus.tokens_sha256) {
    Fail(kComponent, "'{}' has sha256 {} but manifest.json says tokens_sha256 {}",
         tokens_path.string(), actual, corpus.tokens_sha256);
  }
  corpus.tokens.resize(static_cast<size_t>(corpus.n_seqs * corpus.ctx_len));
  std::memcpy(corpus.tokens.data(), bytes.data(), bytes.size());
  for (size_t i = 0; i < corpus.tokens.size(); ++i) {
    const int32_t t = corpus.tokens[i];
    if (t < 0 || (corpus.vocab_size > 0 && t >= corpus.vocab_size)) {
      Fail(kComponent, "'{}': token {} (sequence {}, position {}) is outside [0, vocab_size {})",
           tokens_path.string(), t, i / corpus.ctx_len, i % corpus.ctx_len, corpus.vocab_size);
    }
  }
  return corpus;
}

nlohmann::ordered_json WriteCorpus(const std::filesystem::path& dir,
                                   std::span<const int32_t> tokens, int64_t ctx_len,
                                   const nlohmann::ordered_json& descriptive) {
  const nlohmann::ordered_json manifest =
      descriptive.is_object() ? descriptive : nlohmann::ordered_json::object();
  CHECK_MSG(ctx_len > 0 && !tokens.empty() && tokens.size() % ctx_len == 0, "tokens {} ctx_len {}",
            tokens.size(), ctx_len);
  std::filesystem::create_directories(dir);
  const std::string_view bytes(reinterpret_cast<const char*>(tokens.data()),
                               tokens.size() * sizeof(int32_t));
  nlohmann::ordered_json m;
  m["format_version"] = 1;
  m["kind"] = "kl-eval-corpus";
  m["tokenizer"] = manifest.value("tokenizer", "");
  m["vocab_size"] = manifest.contains("vocab_size") ? manifest["vocab_size"] : nullptr;
  for (const char* key : {"tokenizer_sha256", "bos_id", "eos_id"}) {  // eval/runners/vocab_check.h
    if (manifest.contains(key)) m[key] = manifest[key];
  }
  m["ctx_len"] = ctx_len;
  m["n_seqs"] = static_cast<int64_t>(tokens.size()) / ctx_len;
  m["n_tokens"] = tokens.size();
  m["seed"] = manifest.contains("seed") ? manifest["seed"] : nullptr;
  m["chat_template"] = manifest.contains("chat_template") ? manifest["chat_template"] : nullptr;
  m["sources"] =
      manifest.contains("sources") ? manifest["sources"] : nlohmann::ordered_json::array();
  m["tokens_sha256"] = Sha256Hex(bytes);
  m["created"] = manifest.contains("created") ? manifest["created"].get<std::string>() : UtcNow();
  m["notes"] = manifest.contains("notes") ? manifest["notes"] : nullptr;
  WriteFileAtomic(dir / "tokens.bin", bytes);
  WriteFileAtomic(dir / "manifest.json", m.dump(2) + "\n");
  return m;
}

CorpusSlice SliceCorpus(const Corpus& corpus, int64_t seq_start, int64_t seq_end,
                        const char* component) {
  const int64_t end = seq_end < 0 ? corpus.n_seqs : seq_end;
  if (seq_start < 0 || seq_start >= end || end > corpus.n_seqs) {
    Fail(component, "sequence slice [{}, {}) is not inside the corpus' {} sequences ('{}')",
         seq_start, end, corpus.n_seqs, corpus.dir.string());
  }
  return {.seq_start = seq_start,
          .seq_end = end,
          .tokens = std::span<const int32_t>(corpus.tokens)
                        .subspan(static_cast<size_t>(seq_start * corpus.ctx_len),
                                 static_cast<size_t>((end - seq_start) * corpus.ctx_len))};
}

void CheckCorpusVocabularyMatches(const Corpus& corpus, int64_t logits_vocab,
                                  std::optional<int64_t> tokenizer_vocab,
                                  const std::string& teacher, const char* component) {
  if (corpus.vocab_size > 0 && corpus.vocab_size != logits_vocab &&
      corpus.vocab_size != tokenizer_vocab.value_or(-1)) {
    Fail(component,
         "corpus '{}' was tokenized for a vocabulary of {} but teacher '{}' "
         "has {}: a different tokenizer",
         corpus.dir.string(), corpus.vocab_size, teacher, logits_vocab);
  }
}

}  // namespace proctor
