// Do two vocabularies agree? The checks behind "the dump / corpus was made with a different
// tokenizer" and two-model KL's "the vocabularies must match": a model's logits width, its
// tokenizer's fingerprint (TokenizerFingerprint) and special token ids, compared with another
// model's or with what a dump's or corpus' manifest recorded. Mismatches are errors that name
// both sides (files and values).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "eval/formats/corpus.h"
#include "eval/formats/ref_logits.h"
#include "text/tokenizer/tokenizer.h"

namespace proctor {

// sha256 (hex) of a canonical text of the vocabulary: one line "<id>\t<token>\t<special 0|1>"
// per id in [0, VocabSize()) (an id without a token writes "\x01none"), then "bos=<id>" and
// "eos=<id>". Two tokenizers with the same fingerprint map every id to the same token.
std::string TokenizerFingerprint(const text::Tokenizer& tokenizer);

// What is known about one side's vocabulary. Unknown values stay empty/absent.
struct VocabularyIdentity {
  std::string source{};                   // "candidate model '<spec>'", "dump manifest '<file>'"
  std::optional<int64_t> logits_vocab{};  // the model's logits width
  std::optional<int64_t>
      tokenizer_vocab{};  // the tokenizer's VocabSize() (or a recorded vocab_size)
  std::optional<std::string> tokenizer_sha256{};
  std::optional<int32_t> bos_id{};
  std::optional<int32_t> eos_id{};
  std::string tokenizer_description{};  // Tokenizer::Describe() or a manifest's "tokenizer"

  nlohmann::ordered_json ToJson() const;  // the recorded keys (vocab_size, tokenizer_sha256, ..)
};

// A model's identity comes from the model opened once (eval/runners/eval_model.h
// EvalModel::Identity). The identity a dump or corpus recorded, from its manifest as its reader
// parsed it: vocab_size, tokenizer_sha256, bos_id, eos_id (and the corpus' "tokenizer" description)
// when present.
VocabularyIdentity RecordedVocabularyIdentity(const ReferenceLogitsManifest& manifest,
                                              const std::filesystem::path& manifest_path);
VocabularyIdentity RecordedVocabularyIdentity(const Corpus& corpus);

// Two models scored against each other: logits widths must be equal; when both tokenizers are
// known their fingerprints and special ids must be equal. Error("[kl] ...") names both.
void CheckSameVocabulary(const VocabularyIdentity& reference, const VocabularyIdentity& candidate);

// A model against what a dump or corpus recorded: a recorded vocab_size must equal the model's
// logits width or its tokenizer's size; a recorded tokenizer_sha256 / bos_id / eos_id must
// equal the model tokenizer's (when it has one). Error("[kl] ...") explains the mismatch.
void CheckRecordedVocabulary(const VocabularyIdentity& recorded, const VocabularyIdentity& model);

}  // namespace proctor
