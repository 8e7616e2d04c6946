#include "eval/runners/dump_floor.h"

#include <fmt/format.h>

#include <algorithm>

#include "eval/formats/ref_logits.h"
#include "util/error.h"
#include "util/file.h"
#include "util/sha256.h"
#include "util/timing.h"

namespace proctor {
namespace {

constexpr const char* kMagic = "proctor_dump_floor";
constexpr int kVersion = 1;

std::string ManifestSha256(const std::filesystem::path& dump_dir) {
  return Sha256FileHex(dump_dir / "manifest.json");
}

}  // namespace

KlEvalResult DumpFloorResult(const std::filesystem::path& dump_dir, const DumpFloorRun& run,
                             const std::vector<std::vector<PositionScore>>& scores,
                             const std::filesystem::path& per_position) {
  const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(dump_dir);
  KlEvalResult floor;
  floor.label = dump.Label();
  floor.candidate = run.teacher;
  floor.reference = dump_dir.string();
  floor.manifest = dump.manifest();
  floor.positions_per_seq = dump.positions();
  floor.candidate_vocab = run.vocab;
  floor.chunk_size = run.chunk_size;
  floor.threads = run.threads;
  FinishKlRun(per_position,
              {.flags = 0,
               .positions_per_seq = static_cast<uint64_t>(dump.positions()),
               .top_k = static_cast<uint64_t>(run.top_k),
               .vocab = static_cast<uint64_t>(run.vocab)},
              scores, MonotonicSeconds(), /*worst=*/20, &floor);
  floor.stats.elapsed_seconds = 0;
  floor.stats.positions_per_second = 0;
  floor.timings = {};
  return floor;
}

std::string FormatDumpFloorLine(const KlEvalResult& floor) {
  return fmt::format(
      "floor (the teacher against its own dump): KL mean {:.3e} +- {:.1e}, top-1 {:.4f}, mass "
      "{:.4f}\n",
      floor.stats.kl.mean, floor.stats.kl.standard_error, floor.stats.top1_agreement,
      floor.stats.mean_mass);
}

void WriteDumpFloor(const std::filesystem::path& dump_dir, const KlEvalResult& floor) {
  nlohmann::ordered_json file = {{kMagic, kVersion},
                                 {"manifest_sha256", ManifestSha256(dump_dir)},
                                 {"floor", KlEvalResultToJson(floor)}};
  WriteFileAtomic(dump_dir / kDumpFloorFile, file.dump(1) + "\n");
}

std::optional<KlEvalResult> ReadDumpFloor(const std::filesystem::path& dump_dir, std::string* why) {
  const std::filesystem::path path = dump_dir / kDumpFloorFile;
  if (!std::filesystem::exists(path)) {
    *why = fmt::format(
        "'{}' has no {} (a dump written before proctor kept floors, or with "
        "--no-floor)",
        dump_dir.string(), kDumpFloorFile);
    return std::nullopt;
  }
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(ReadFileToString(path));
  } catch (const nlohmann::json::exception& e) {
    Fail("ref-logits", "'{}' is not JSON: {}", path.string(), e.what());
  }
  if (!file.is_object() || file.value(kMagic, 0) != kVersion || !file.contains("floor")) {
    Fail("ref-logits", "'{}' is not a dump floor file (version {} of '{}' expected)", path.string(),
         kVersion, kMagic);
  }
  const std::string recorded = file.value("manifest_sha256", std::string());
  if (recorded != ManifestSha256(dump_dir)) {
    *why = fmt::format(
        "'{}' belongs to another manifest than the dump's (it was rewritten): "
        "its floor is not shown",
        path.string());
    return std::nullopt;
  }
  return KlEvalResultFromJson(file["floor"], path.string());
}

RowAgainstAbove CompareWithFloor(const KlEvalResult& floor, const KlEvalResult& candidate) {
  const size_t n = std::min(floor.sequence_mean_kl.size(), candidate.sequence_mean_kl.size());
  const std::vector<double> floor_kl(floor.sequence_mean_kl.begin(),
                                     floor.sequence_mean_kl.begin() + static_cast<long>(n));
  const std::vector<double> kl(candidate.sequence_mean_kl.begin(),
                               candidate.sequence_mean_kl.begin() + static_cast<long>(n));
  return CompareRowWithAbove(floor_kl, floor_kl, kl);
}

nlohmann::ordered_json FloorComparisonToJson(const KlEvalResult& floor,
                                             const KlEvalResult& candidate,
                                             const std::filesystem::path& dump_dir) {
  const RowAgainstAbove vs = CompareWithFloor(floor, candidate);
  return {
      {"kl", {{"mean", floor.stats.kl.mean}, {"standard_error", floor.stats.kl.standard_error}}},
      {"top1_agreement", floor.stats.top1_agreement},
      {"mean_captured_mass", floor.stats.mean_mass},
      {"file", (dump_dir / kDumpFloorFile).string()},
      {"candidate_minus_floor",
       vs.known
           ? nlohmann::ordered_json({{"kl", vs.difference}, {"standard_error", vs.standard_error}})
           : nlohmann::ordered_json(nullptr)},
      {"verdict", vs.verdict}};
}

}  // namespace proctor
