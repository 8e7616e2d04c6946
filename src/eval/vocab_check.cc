#include "eval/vocab_check.h"

#include <fmt/format.h>

#include "model/load.h"
#include "util/error.h"
#include "util/sha256.h"

namespace proctor {
namespace {

constexpr const char* kComponent = "kl";

template <typename T>
std::string Show(const std::optional<T>& v) {
  if (!v) return "unknown";
  if constexpr (std::is_same_v<T, std::string>) {
    return *v;
  } else {
    return fmt::format("{}", *v);
  }
}

std::string Describe(const VocabularyIdentity& v) {
  return fmt::format(
      "{}: logits vocabulary {}, tokenizer size {}, tokenizer sha256 {}, bos {}, "
      "eos {}{}",
      v.source, Show(v.logits_vocab), Show(v.tokenizer_vocab), Show(v.tokenizer_sha256),
      Show(v.bos_id), Show(v.eos_id),
      v.tokenizer_description.empty() ? std::string()
                                      : fmt::format(" ({})", v.tokenizer_description));
}

template <typename T>
bool Differ(const std::optional<T>& a, const std::optional<T>& b) {
  return a && b && *a != *b;
}

}  // namespace

std::string TokenizerFingerprint(const text::Tokenizer& tokenizer) {
  Sha256 sha;
  const int64_t n = static_cast<int64_t>(tokenizer.VocabSize());
  std::string line;
  for (int64_t id = 0; id < n; ++id) {
    const auto token = tokenizer.IdToToken(static_cast<int32_t>(id));
    line = fmt::format("{}\t", id);
    line += token ? *token : std::string("\x01none");
    line += tokenizer.IsSpecial(static_cast<int32_t>(id)) ? "\t1\n" : "\t0\n";
    sha.Update(line);
  }
  sha.Update(fmt::format("bos={}\neos={}\n", tokenizer.BosId(), tokenizer.EosId()));
  return sha.HexDigest();
}

nlohmann::ordered_json VocabularyIdentity::ToJson() const {
  nlohmann::ordered_json j;
  if (logits_vocab) j["vocab_size"] = *logits_vocab;
  if (tokenizer_vocab) j["tokenizer_vocab_size"] = *tokenizer_vocab;
  if (tokenizer_sha256) j["tokenizer_sha256"] = *tokenizer_sha256;
  if (bos_id) j["bos_id"] = *bos_id;
  if (eos_id) j["eos_id"] = *eos_id;
  return j;
}

VocabularyIdentity ModelVocabularyIdentity(const std::string& model_spec, int64_t logits_vocab,
                                           const std::string& role) {
  VocabularyIdentity v;
  v.source = fmt::format("{} '{}'", role, model_spec);
  if (logits_vocab > 0) v.logits_vocab = logits_vocab;
  std::unique_ptr<text::Tokenizer> tokenizer;
  try {
    tokenizer = text::LoadTokenizer(LocateModel(model_spec).path);
  } catch (const Error&) {
    return v;  // no tokenizer beside the weights (synthetic or weights-only models)
  }
  v.tokenizer_vocab = static_cast<int64_t>(tokenizer->VocabSize());
  v.tokenizer_sha256 = TokenizerFingerprint(*tokenizer);
  v.bos_id = tokenizer->BosId();
  v.eos_id = tokenizer->EosId();
  v.tokenizer_description = tokenizer->Describe();
  return v;
}

VocabularyIdentity RecordedVocabularyIdentity(const nlohmann::json& m,
                                              const std::filesystem::path& manifest_path) {
  VocabularyIdentity v;
  v.source = fmt::format("'{}'", manifest_path.string());
  const auto integer = [&](const char* key) -> std::optional<int64_t> {
    if (!m.contains(key) || m[key].is_null()) return std::nullopt;
    if (!m[key].is_number_integer()) {
      Fail(kComponent, "'{}': \"{}\" must be an integer, got {}", manifest_path.string(), key,
           m[key].dump());
    }
    return m[key].get<int64_t>();
  };
  v.tokenizer_vocab = integer("vocab_size");
  if (const auto bos = integer("bos_id")) v.bos_id = static_cast<int32_t>(*bos);
  if (const auto eos = integer("eos_id")) v.eos_id = static_cast<int32_t>(*eos);
  if (m.contains("tokenizer_sha256") && m["tokenizer_sha256"].is_string()) {
    v.tokenizer_sha256 = m["tokenizer_sha256"].get<std::string>();
  }
  if (m.contains("tokenizer") && m["tokenizer"].is_string()) {
    v.tokenizer_description = m["tokenizer"].get<std::string>();
  }
  return v;
}

void CheckSameVocabulary(const VocabularyIdentity& a, const VocabularyIdentity& b) {
  if (Differ(a.logits_vocab, b.logits_vocab)) {
    Fail(kComponent,
         "the vocabularies differ: {} has a logits vocabulary of {}, {} has {}; two-model KL "
         "needs the same vocabulary\n  {}\n  {}",
         a.source, *a.logits_vocab, b.source, *b.logits_vocab, Describe(a), Describe(b));
  }
  if (Differ(a.tokenizer_sha256, b.tokenizer_sha256) || Differ(a.bos_id, b.bos_id) ||
      Differ(a.eos_id, b.eos_id)) {
    Fail(kComponent,
         "the tokenizers differ: {} and {} map token ids to different tokens (or different "
         "special ids), so their distributions are not over the same outcomes\n  {}\n  {}",
         a.source, b.source, Describe(a), Describe(b));
  }
}

void CheckRecordedVocabulary(const VocabularyIdentity& recorded, const VocabularyIdentity& model) {
  if (recorded.tokenizer_vocab && *recorded.tokenizer_vocab != model.logits_vocab.value_or(-1) &&
      *recorded.tokenizer_vocab != model.tokenizer_vocab.value_or(-1) &&
      (model.logits_vocab || model.tokenizer_vocab)) {
    Fail(kComponent,
         "{} records vocab_size {}, but {} has a logits vocabulary of {} and a tokenizer of {} "
         "tokens: it was made with a different tokenizer\n  recorded: {}\n  model: {}",
         recorded.source, *recorded.tokenizer_vocab, model.source, Show(model.logits_vocab),
         Show(model.tokenizer_vocab), Describe(recorded), Describe(model));
  }
  if (Differ(recorded.tokenizer_sha256, model.tokenizer_sha256)) {
    Fail(kComponent,
         "{} records tokenizer_sha256 {}, but the tokenizer of {} has fingerprint {}: the "
         "tokens were made with a different tokenizer\n  recorded: {}\n  model: {}",
         recorded.source, *recorded.tokenizer_sha256, model.source, *model.tokenizer_sha256,
         Describe(recorded), Describe(model));
  }
  if (Differ(recorded.bos_id, model.bos_id) || Differ(recorded.eos_id, model.eos_id)) {
    Fail(kComponent,
         "{} records special ids bos {} / eos {}, but {} has bos {} / eos {}: a different "
         "tokenizer\n  recorded: {}\n  model: {}",
         recorded.source, Show(recorded.bos_id), Show(recorded.eos_id), model.source,
         Show(model.bos_id), Show(model.eos_id), Describe(recorded), Describe(model));
  }
}

}  // namespace proctor
