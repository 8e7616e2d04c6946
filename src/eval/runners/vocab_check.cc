#include "eval/runners/vocab_check.h"

#include <fmt/format.h>

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

VocabularyIdentity RecordedVocabularyIdentity(const ReferenceLogitsManifest& m,
                                              const std::filesystem::path& manifest_path) {
  VocabularyIdentity v;
  v.source = fmt::format("'{}'", manifest_path.string());
  v.tokenizer_vocab = m.vocab_size;
  v.tokenizer_sha256 = m.tokenizer_sha256;
  v.bos_id = m.bos_id;
  v.eos_id = m.eos_id;
  return v;
}

VocabularyIdentity RecordedVocabularyIdentity(const Corpus& corpus) {
  VocabularyIdentity v;
  v.source = fmt::format("'{}'", (corpus.dir / "manifest.json").string());
  if (corpus.vocab_size > 0) v.tokenizer_vocab = corpus.vocab_size;
  v.tokenizer_sha256 = corpus.tokenizer_sha256;
  v.bos_id = corpus.bos_id;
  v.eos_id = corpus.eos_id;
  v.tokenizer_description = corpus.tokenizer;
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
