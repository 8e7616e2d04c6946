#include "eval/runners/dump_shards.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "eval/formats/corpus.h"
#include "eval/formats/per_position.h"
#include "eval/formats/ref_logits.h"
#include "eval/runners/dump_floor.h"
#include "util/error.h"
#include "util/file.h"
#include "util/json_file.h"
#include "util/sha256.h"

namespace proctor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "proctor_dump_shard";
constexpr int kVersion = 1;

// What makes two shards parts of one run: the same teacher, corpus and settings.
nlohmann::ordered_json RunIdentity(const TeacherDumpOptions& options, const Corpus& corpus) {
  return {{"teacher", options.teacher},
          {"corpus_sha256", corpus.tokens_sha256},
          {"corpus_n_seqs", corpus.n_seqs},
          {"top_k", options.top_k},
          {"chunk_size", options.chunk_size},
          {"compute", std::string(ComputeModeName(options.runtime.compute))},
          {"kv", options.runtime.kv.Name()},
          {"floor", options.floor}};
}

struct ShardRecord {
  fs::path dir{};
  Shard shard{};
  ItemRange seqs{};
  nlohmann::json run{};
  std::optional<std::string> manifest_sha256{};  // none for an empty shard
};

void WriteShardRecord(const ShardRecord& record) {
  const nlohmann::ordered_json file = {
      {kMagic, kVersion},
      {"shard",
       {{"index", record.shard.index},
        {"count", record.shard.count},
        {"seq_start", record.seqs.first},
        {"seq_end", record.seqs.end}}},
      {"run", record.run},
      {"manifest_sha256", record.manifest_sha256 ? nlohmann::ordered_json(*record.manifest_sha256)
                                                 : nlohmann::ordered_json(nullptr)}};
  WriteFileAtomic(record.dir / kDumpShardFile, file.dump(1) + "\n");
}

// DIR/shard.json, validated; `component` names the verb in errors.
ShardRecord ReadShardRecord(const fs::path& dir, const char* component) {
  const fs::path path = dir / kDumpShardFile;
  if (!fs::exists(path)) {
    Fail(component,
         "'{}' is not a finished dump shard: it has no {} (proctor dump --shard I/N writes it "
         "when the shard is done)",
         dir.string(), kDumpShardFile);
  }
  const nlohmann::json file = ReadJsonFile(path, component);
  ShardRecord record{.dir = dir};
  try {
    if (!file.is_object() || file.value(kMagic, 0) != kVersion) {
      Fail(component, "'{}' is not a dump shard record (version {} of '{}' expected)",
           path.string(), kVersion, kMagic);
    }
    const nlohmann::json& shard = file.at("shard");
    record.shard = {.index = shard.at("index").get<int64_t>(),
                    .count = shard.at("count").get<int64_t>()};
    record.seqs = {.first = shard.at("seq_start").get<int64_t>(),
                   .end = shard.at("seq_end").get<int64_t>()};
    record.run = file.at("run");
    if (!file.at("manifest_sha256").is_null()) {
      record.manifest_sha256 = file.at("manifest_sha256").get<std::string>();
    }
    CheckShardHolds(record.shard, record.run.at("corpus_n_seqs").get<int64_t>(), record.seqs,
                    "sequences", path.string(), component);
  } catch (const nlohmann::json::exception& e) {
    Fail(component, "'{}' is not a dump shard record: {}", path.string(), e.what());
  }
  return record;
}

// The manifest fields every shard of one run shares (created and the slice's notes, n_seqs and
// tokens differ by shard).
nlohmann::json SharedManifestFields(const ReferenceLogitsManifest& m) {
  auto optional = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  return {{"model", m.model},
          {"model_sha256", optional(m.model_sha256)},
          {"corpus_sha256", m.corpus_sha256},
          {"ctx_len", m.ctx_len},
          {"top_k", m.top_k},
          {"positions_per_seq", m.positions_per_seq},
          {"vocab_size", optional(m.vocab_size)},
          {"tokenizer_sha256", optional(m.tokenizer_sha256)},
          {"bos_id", optional(m.bos_id)},
          {"eos_id", optional(m.eos_id)}};
}

// `from` into place at `to` through a temporary name: a hard link when both are on one file
// system (no bytes written), else a copy. Returns whether it was linked.
bool LinkOrCopy(const fs::path& from, const fs::path& to) {
  const fs::path temp = to.string() + fmt::format(".tmp.{}", ::getpid());
  std::error_code link_error;
  fs::create_hard_link(from, temp, link_error);
  const bool linked = !link_error;
  if (!linked) fs::copy_file(from, temp, fs::copy_options::overwrite_existing);
  fs::rename(temp, to);
  return linked;
}

}  // namespace

DumpShardResult DumpTeacherShard(TeacherDumpOptions options, const Shard& shard) {
  constexpr const char* kComponent = "dump";
  if (options.seq_start != 0 || options.seq_end != -1) {
    Fail(kComponent,
         "--shard {} takes its own share of the corpus' sequences: it cannot be combined with "
         "--seq-start {} / --seq-end {}",
         shard.Name(), options.seq_start, options.seq_end);
  }
  const Corpus corpus = ReadCorpus(options.corpus_dir);
  DumpShardResult result{
      .shard = shard, .seqs = ShardItems(shard, corpus.n_seqs), .n_seqs_total = corpus.n_seqs};
  ShardRecord record{.dir = options.out_dir,
                     .shard = shard,
                     .seqs = result.seqs,
                     .run = RunIdentity(options, corpus)};
  if (fs::exists(options.out_dir / kDumpShardFile)) {
    const ShardRecord done = ReadShardRecord(options.out_dir, kComponent);
    if (done.shard != shard || done.run != record.run) {
      Fail(kComponent,
           "'{}' holds shard {} of another run ({}); this run asks for shard {}: choose another "
           "directory",
           options.out_dir.string(), done.shard.Name(),
           done.shard != shard ? fmt::format("shard {} vs {}", done.shard.Name(), shard.Name())
                               : FirstDifferingKey(done.run, record.run),
           shard.Name());
    }
    result.already_done = true;
    return result;
  }
  if (fs::exists(options.out_dir / "manifest.json")) {
    Fail(kComponent,
         "'{}' holds a complete dump but no {}: not a shard's directory, or a shard killed while "
         "finishing; delete it and run the shard again",
         options.out_dir.string(), kDumpShardFile);
  }
  if (result.seqs.size() == 0) {
    fs::create_directories(options.out_dir);
    if (!fs::is_empty(options.out_dir)) {
      Fail(kComponent, "'{}' is not empty; choose an empty directory for shard {}",
           options.out_dir.string(), shard.Name());
    }
  } else {
    options.seq_start = result.seqs.first;
    options.seq_end = result.seqs.end;
    options.resume = true;  // a rerun of an interrupted shard continues it
    if (options.floor) options.floor_per_position = options.out_dir / kDumpShardFloorFile;
    result.dump = DumpTeacher(options);
    record.manifest_sha256 = Sha256FileHex(options.out_dir / "manifest.json");
  }
  WriteShardRecord(record);
  return result;
}

DumpMergeResult MergeDumpShards(const fs::path& out_dir, const std::vector<fs::path>& shard_dirs) {
  constexpr const char* kComponent = "merge";
  if (shard_dirs.empty()) Fail(kComponent, "no dump shards to merge");
  std::vector<ShardRecord> records;
  std::vector<ShardPart> shards;
  records.reserve(shard_dirs.size());
  shards.reserve(shard_dirs.size());
  for (const fs::path& dir : shard_dirs) {
    records.push_back(ReadShardRecord(dir, kComponent));
    const ShardRecord& record = records.back();
    const std::string differs = FirstDifferingKey(record.run, records.front().run);
    if (!differs.empty()) {
      Fail(kComponent, "'{}' is a shard of another run than '{}': {}", dir.string(),
           records.front().dir.string(), differs);
    }
    shards.push_back({.shard = record.shard, .name = dir.string()});
  }
  const ShardRecord& first = records.front();
  std::vector<const ShardRecord*> by_index;
  by_index.reserve(records.size());
  for (const size_t i : OrderShardParts(shards)) by_index.push_back(&records[i]);
  // Every shard's dump as it finished, in corpus order.
  struct Part {
    const ShardRecord* record;
    ReferenceLogitsDump dump;
  };
  std::vector<Part> parts;
  for (const ShardRecord* shard_record : by_index) {
    const ShardRecord& record = *shard_record;
    if (record.seqs.size() == 0) continue;
    ReferenceLogitsDump dump = ReferenceLogitsDump::Open(record.dir);
    const std::string sha = Sha256FileHex(record.dir / "manifest.json");
    if (!record.manifest_sha256 || sha != *record.manifest_sha256) {
      Fail(kComponent,
           "'{}' changed after shard {} finished: manifest.json has sha256 {}, {} says {}",
           record.dir.string(), record.shard.Name(), sha, kDumpShardFile,
           record.manifest_sha256.value_or("none"));
    }
    if (dump.n_seqs() != record.seqs.size()) {
      Fail(kComponent, "'{}' holds {} sequences; shard {} is [{}, {})", record.dir.string(),
           dump.n_seqs(), record.shard.Name(), record.seqs.first, record.seqs.end);
    }
    if (!parts.empty()) {
      const nlohmann::json a = SharedManifestFields(dump.manifest());
      const nlohmann::json b = SharedManifestFields(parts.front().dump.manifest());
      if (a != b) {
        Fail(kComponent, "'{}' and '{}' are dumps of different teachers or settings: {}",
             record.dir.string(), parts.front().record->dir.string(), FirstDifferingKey(a, b));
      }
    }
    parts.push_back({&record, std::move(dump)});
  }
  const int64_t total = first.run.at("corpus_n_seqs").get<int64_t>();
  if (parts.empty()) Fail(kComponent, "the {} shards hold no sequences", first.shard.count);
  const ReferenceLogitsManifest& shared = parts.front().dump.manifest();
  const int64_t positions = parts.front().dump.positions();
  // The floor's per-position scores, every sequence under its corpus number.
  const bool floor = first.run.at("floor").get<bool>();
  std::vector<std::vector<PositionScore>> floor_scores;
  DumpFloorRun floor_run{.teacher = first.run.at("teacher").get<std::string>(),
                         .top_k = shared.top_k,
                         .chunk_size = first.run.at("chunk_size").get<int64_t>()};
  if (floor) {
    floor_scores.resize(static_cast<size_t>(total));
    for (const Part& part : parts) {
      const fs::path path = part.record->dir / kDumpShardFloorFile;
      const PerPositionFile file = ReadPerPositionFile(path);
      if (file.header.n_seqs != static_cast<uint64_t>(part.dump.n_seqs()) ||
          file.header.positions_per_seq != static_cast<uint64_t>(positions) ||
          file.header.top_k != static_cast<uint64_t>(shared.top_k)) {
        Fail(kComponent,
             "'{}' scores {} sequences of {} positions at top-k {}; its dump has {} of {} at {}",
             path.string(), file.header.n_seqs, file.header.positions_per_seq, file.header.top_k,
             part.dump.n_seqs(), positions, shared.top_k);
      }
      if (file.records.size() != static_cast<size_t>(part.dump.n_seqs() * positions)) {
        Fail(kComponent, "'{}' holds {} scores; its {} sequences of {} positions need {}",
             path.string(), file.records.size(), part.dump.n_seqs(), positions,
             part.dump.n_seqs() * positions);
      }
      if (floor_run.vocab == 0) {
        floor_run.vocab = static_cast<int64_t>(file.header.vocab);
        std::string why;
        const std::optional<KlEvalResult> kept = ReadDumpFloor(part.record->dir, &why);
        if (!kept) Fail(kComponent, "shard {}: {}", part.record->shard.Name(), why);
        floor_run.threads = kept->threads;
      }
      for (const PerPositionRecord& r : file.records) {
        if (r.seq >= part.dump.n_seqs() || r.position >= positions) {
          Fail(kComponent, "'{}' scores sequence {} position {}: outside its {} x {}",
               path.string(), r.seq, r.position, part.dump.n_seqs(), positions);
        }
        auto& seq = floor_scores[static_cast<size_t>(part.record->seqs.first + r.seq)];
        if (seq.empty()) seq.resize(static_cast<size_t>(positions));
        seq[r.position] = r.score;
      }
    }
  }
  // Nothing is written before every input is checked.
  if (fs::exists(out_dir) && !(fs::is_directory(out_dir) && fs::is_empty(out_dir))) {
    Fail(kComponent, "'{}' exists and is not an empty directory; choose where the dump goes",
         out_dir.string());
  }
  fs::create_directories(out_dir);
  DumpMergeResult result{.shards = first.shard.count, .n_seqs = total};
  std::string tokens;
  for (const Part& part : parts) tokens += ReadFileToString(part.record->dir / "tokens.bin");
  WriteFileAtomic(out_dir / "tokens.bin", tokens);
  result.bytes_copied += tokens.size();
  for (const Part& part : parts) {
    for (int64_t s = 0; s < part.dump.n_seqs(); ++s) {
      const fs::path from = ReferenceSequencePath(part.record->dir, s);
      const uint64_t bytes = fs::file_size(from);
      const bool linked =
          LinkOrCopy(from, ReferenceSequencePath(out_dir, part.record->seqs.first + s));
      (linked ? result.bytes_linked : result.bytes_copied) += bytes;
    }
  }
  // The whole run's manifest: the shards' shared fields, the whole corpus (no slice note).
  ReferenceLogitsManifest manifest = shared;
  manifest.n_seqs = total;
  manifest.notes = std::nullopt;
  manifest.tokens_sha256 = Sha256Hex(tokens);
  const std::string manifest_text = manifest.ToJson();
  WriteFileAtomic(out_dir / "manifest.json", manifest_text);
  result.bytes_copied += manifest_text.size();
  result.positions = total * positions;
  if (floor) {
    KlEvalResult merged = DumpFloorResult(out_dir, floor_run, floor_scores, {});
    WriteDumpFloor(out_dir, merged);
    result.floor = std::move(merged);
  }
  return result;
}

}  // namespace proctor
