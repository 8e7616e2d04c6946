#include "eval/formats/ref_logits.h"

#include <bit>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/f16_table.h"
#include "util/half.h"
#include "util/sha256.h"

namespace proctor {
namespace {

static_assert(std::endian::native == std::endian::little, "the dump format is little-endian");

constexpr const char* kComponent = "ref-logits";
// Upper bound for ctx_len, n_seqs and top_k: keeps every size product far from overflow.
constexpr int64_t kMaxField = int64_t{1} << 31;

int64_t RequirePositiveInt(const nlohmann::json& j, const char* key,
                           const std::filesystem::path& path) {
  if (!j.contains(key)) Fail(kComponent, "'{}' has no \"{}\"", path.string(), key);
  const auto& v = j[key];
  if (!v.is_number_integer()) {
    Fail(kComponent, "\"{}\" in '{}' must be a positive integer, got {}", key, path.string(),
         v.dump());
  }
  const int64_t value = v.is_number_unsigned()
                            ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), kMaxField))
                            : v.get<int64_t>();
  if (value <= 0 || value >= kMaxField) {
    Fail(kComponent, "\"{}\" in '{}' must be a positive integer below 2^31, got {}", key,
         path.string(), v.dump());
  }
  return value;
}

std::string RequireString(const nlohmann::json& j, const char* key,
                          const std::filesystem::path& path) {
  if (!j.contains(key)) Fail(kComponent, "'{}' has no \"{}\"", path.string(), key);
  if (!j[key].is_string()) {
    Fail(kComponent, "\"{}\" in '{}' must be a string, got {}", key, path.string(), j[key].dump());
  }
  return j[key].get<std::string>();
}

std::optional<std::string> OptionalString(const nlohmann::json& j, const char* key,
                                          const std::filesystem::path& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return RequireString(j, key, path);
}

uint64_t FileSizeOrFail(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    Fail(kComponent, "missing {} '{}'", what, path.string());
  }
  if (!std::filesystem::is_regular_file(status)) {
    Fail(kComponent, "{} '{}' is not a regular file", what, path.string());
  }
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) Fail(kComponent, "cannot get the size of '{}': {}", path.string(), ec.message());
  return size;
}

}  // namespace

std::filesystem::path ReferenceSequencePath(const std::filesystem::path& dir, int64_t seq) {
  return dir / fmt::format("seq-{}.bin", seq);
}

ReferenceLogitsManifest ReferenceLogitsManifest::Parse(const std::string& text,
                                                       const std::filesystem::path& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    Fail(kComponent, "'{}' is not valid JSON: {}", path.string(), e.what());
  }
  if (!j.is_object()) Fail(kComponent, "'{}' must hold a JSON object", path.string());
  if (!j.contains("format_version")) {
    Fail(kComponent, "'{}' has no \"format_version\" (this reader implements format_version {})",
         path.string(), kReferenceLogitsFormatVersion);
  }
  const auto& version = j["format_version"];
  if (!version.is_number_integer() || version.get<int64_t>() != kReferenceLogitsFormatVersion) {
    Fail(kComponent,
         "'{}' has format_version {}; this reader implements format_version {} only (a newer "
         "proctor may read it)",
         path.string(), version.dump(), kReferenceLogitsFormatVersion);
  }
  ReferenceLogitsManifest m;
  m.model = RequireString(j, "model", path);
  m.corpus_sha256 = RequireString(j, "corpus_sha256", path);
  m.ctx_len = RequirePositiveInt(j, "ctx_len", path);
  m.n_seqs = RequirePositiveInt(j, "n_seqs", path);
  m.top_k = RequirePositiveInt(j, "top_k", path);
  m.positions_per_seq = -1;  // absent
  if (j.contains("positions_per_seq")) {
    const auto& v = j["positions_per_seq"];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxField) {
      Fail(kComponent, "\"positions_per_seq\" in '{}' must be a non-negative integer, got {}",
           path.string(), v.dump());
    }
    m.positions_per_seq = v.get<int64_t>();
  }
  m.created = OptionalString(j, "created", path);
  m.notes = OptionalString(j, "notes", path);
  const auto optional_int = [&](const char* key, int64_t lo) -> std::optional<int64_t> {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() >= kMaxField) {
      Fail(kComponent, "\"{}\" in '{}' must be an integer in [{}, 2^31), got {}", key,
           path.string(), lo, v.dump());
    }
    return v.get<int64_t>();
  };
  m.vocab_size = optional_int("vocab_size", 1);
  m.tokenizer_sha256 = OptionalString(j, "tokenizer_sha256", path);
  m.model_sha256 = OptionalString(j, "model_sha256", path);
  m.tokens_sha256 = OptionalString(j, "tokens_sha256", path);
  if (const auto bos = optional_int("bos_id", -1)) m.bos_id = static_cast<int32_t>(*bos);
  if (const auto eos = optional_int("eos_id", -1)) m.eos_id = static_cast<int32_t>(*eos);
  return m;
}

std::string ReferenceLogitsManifest::ToJson() const {
  nlohmann::ordered_json j;
  j["format_version"] = format_version;
  j["model"] = model;
  if (model_sha256) j["model_sha256"] = *model_sha256;
  j["corpus_sha256"] = corpus_sha256;
  if (tokens_sha256) j["tokens_sha256"] = *tokens_sha256;
  j["ctx_len"] = ctx_len;
  j["n_seqs"] = n_seqs;
  j["top_k"] = top_k;
  j["positions_per_seq"] = positions_per_seq;
  if (vocab_size) j["vocab_size"] = *vocab_size;
  if (tokenizer_sha256) j["tokenizer_sha256"] = *tokenizer_sha256;
  if (bos_id) j["bos_id"] = *bos_id;
  if (eos_id) j["eos_id"] = *eos_id;
  if (created) j["created"] = *created;
  if (notes) j["notes"] = *notes;
  return j.dump(2) + "\n";
}

ReferenceLogitsDump ReferenceLogitsDump::Open(const std::filesystem::path& dir) {
  ReferenceLogitsDump dump;
  dump.dir_ = dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    Fail(kComponent, "'{}' is not a directory (expected a reference-logits dump)", dir.string());
  }
  const auto manifest_path = dump.ManifestPath();
  if (!std::filesystem::exists(manifest_path, ec)) {
    Fail(kComponent,
         "missing '{}': '{}' is not a complete reference-logits dump (a dump still being "
         "written, or interrupted, has no manifest yet)",
         manifest_path.string(), dir.string());
  }
  dump.manifest_ = ReferenceLogitsManifest::Parse(ReadFileToString(manifest_path), manifest_path);
  const auto& m = dump.manifest_;

  // In 128 bits: at the field bound (2^31 each) the product times 4 reaches 2^64.
  const unsigned __int128 tokens_expected =
      static_cast<unsigned __int128>(m.n_seqs) * static_cast<unsigned __int128>(m.ctx_len) * 4;
  const uint64_t tokens_size = FileSizeOrFail(dump.TokensPath(), "token file");
  if (static_cast<unsigned __int128>(tokens_size) != tokens_expected) {
    Fail(kComponent, "'{}' is {} bytes; n_seqs {} x ctx_len {} x 4 needs exactly {}",
         dump.TokensPath().string(), tokens_size, m.n_seqs, m.ctx_len,
         tokens_expected > std::numeric_limits<uint64_t>::max()
             ? std::string("2^64 or more")
             : std::to_string(static_cast<uint64_t>(tokens_expected)));
  }

  if (m.tokens_sha256) {  // one streaming read: the teacher-forced tokens are the ones dumped
    const std::string actual = Sha256FileHex(dump.TokensPath());
    if (actual != *m.tokens_sha256) {
      Fail(kComponent,
           "'{}' has sha256 {}, but '{}' records tokens_sha256 {}: the tokens were changed after "
           "the dump was written",
           dump.TokensPath().string(), actual, manifest_path.string(), *m.tokens_sha256);
    }
  }

  const uint64_t record = dump.record_bytes();
  const auto seq0 = dump.SequencePath(0);
  const uint64_t seq0_size = FileSizeOrFail(seq0, "sequence file");
  if (seq0_size % record != 0) {
    Fail(kComponent, "'{}' is {} bytes, not a multiple of the record size {} (6 x top_k {} + 4)",
         seq0.string(), seq0_size, record, m.top_k);
  }
  dump.positions_ = static_cast<int64_t>(seq0_size / record);
  if (dump.positions_ == 0) {  // scoring it would print a table of zeros
    Fail(kComponent, "'{}' holds no records: the dump has nothing to score", seq0.string());
  }
  if (dump.positions_ > m.ctx_len - 1) {
    Fail(kComponent, "'{}' holds {} records; ctx_len {} allows at most {}", seq0.string(),
         dump.positions_, m.ctx_len, m.ctx_len - 1);
  }
  if (m.positions_per_seq != dump.positions_) {
    dump.warnings_.push_back(
        m.positions_per_seq < 0
            ? fmt::format("'{}' has no positions_per_seq; '{}' holds {} records per sequence",
                          manifest_path.string(), seq0.string(), dump.positions_)
            : fmt::format("'{}' says positions_per_seq {} but '{}' holds {} records; using {}",
                          manifest_path.string(), m.positions_per_seq, seq0.string(),
                          dump.positions_, dump.positions_));
  }
  const uint64_t needed = static_cast<uint64_t>(dump.positions_) * record;
  for (int64_t s = 1; s < m.n_seqs; ++s) {
    const auto path = dump.SequencePath(s);
    const uint64_t size = FileSizeOrFail(path, "sequence file");
    if (size < needed) {
      Fail(kComponent, "'{}' is {} bytes ({} records); seq-0.bin holds {} records ({} bytes)",
           path.string(), size, size / record, dump.positions_, needed);
    }
  }
  return dump;
}

std::filesystem::path ReferenceLogitsDump::SequencePath(int64_t seq) const {
  return ReferenceSequencePath(dir_, seq);
}

std::string ReferenceLogitsDump::Label() const {
  return fmt::format("ref-logits:{} top{} ({})", manifest_.model, manifest_.top_k, dir_.string());
}

std::vector<int32_t> ReferenceLogitsDump::Tokens(int64_t seq) const {
  if (seq < 0 || seq >= n_seqs()) {
    Fail(kComponent, "sequence {} is out of range: '{}' has n_seqs {}", seq, dir_.string(),
         n_seqs());
  }
  std::vector<int32_t> tokens(static_cast<size_t>(ctx_len()));
  ReadOnlyFile file(TokensPath());
  file.ReadAt(static_cast<uint64_t>(seq) * ctx_len() * 4,
              std::span<uint8_t>(reinterpret_cast<uint8_t*>(tokens.data()), tokens.size() * 4));
  return tokens;
}

void ReferenceLogitsDump::ReadRecords(int64_t seq, int64_t lo, int64_t hi,
                                      ReferenceRecords* out) const {
  if (seq < 0 || seq >= n_seqs()) {
    Fail(kComponent, "sequence {} is out of range: '{}' has n_seqs {}", seq, dir_.string(),
         n_seqs());
  }
  if (lo < 0 || lo > hi || hi > positions_) {
    Fail(kComponent, "records [{}, {}) of '{}' are out of range: it has {} records per sequence",
         lo, hi, SequencePath(seq).string(), positions_);
  }
  ReadReferenceRecords(SequencePath(seq), lo, hi, top_k(), out);
}

void ReadReferenceRecords(const std::filesystem::path& sequence_file, int64_t lo, int64_t hi,
                          int64_t top_k, ReferenceRecords* out) {
  out->first = lo;
  out->count = hi - lo;
  out->top_k = top_k;
  out->raw.resize(static_cast<size_t>(out->count) * ReferenceRecordBytes(top_k));
  if (out->count > 0) {
    ReadOnlyFile(sequence_file)
        .ReadAt(static_cast<uint64_t>(lo) * ReferenceRecordBytes(top_k),
                std::span<uint8_t>(out->raw));
  }
  DecodeReferenceRecords(out);
}

void DecodeReferenceRecords(ReferenceRecords* out) {
  const int64_t k = out->top_k;
  const uint64_t record = ReferenceRecordBytes(k);
  out->indices.resize(static_cast<size_t>(out->count * k));
  out->logits.resize(static_cast<size_t>(out->count * k));
  out->logsumexp.resize(static_cast<size_t>(out->count));
  const float* f16 = F16ToF32Table();
  for (int64_t r = 0; r < out->count; ++r) {
    const uint8_t* rec = out->raw.data() + r * record;
    std::memcpy(out->indices.data() + r * k, rec, static_cast<size_t>(k) * 4);
    const uint8_t* halves = rec + 4 * k;
    float* logits = out->logits.data() + r * k;
    for (int64_t j = 0; j < k; ++j) {
      uint16_t h;
      std::memcpy(&h, halves + 2 * j, 2);
      logits[j] = f16[h];
    }
    std::memcpy(&out->logsumexp[r], rec + 6 * k, 4);
  }
}

}  // namespace proctor
