// `proctor inspect DIR|MODEL`:
//  - a reference-logits dump (a directory with manifest.json): its manifest and sizes, then a full
//    integrity check of every file and record; non-zero exit with the reason and the file on any
//    problem;
//  - a model (directory with config.json, .gguf file, cached HF id): architecture, tensor count,
//    weight-type histogram, bits per weight, size on disk vs in memory (model/model_summary.h);
//    --json FILE writes the same as JSON.
#include <fmt/format.h>

#include <filesystem>

#include "cli/verbs.h"
#include "eval/formats/ref_logits.h"
#include "eval/formats/ref_logits_integrity.h"
#include "model/load.h"
#include "model/model_summary.h"
#include "util/error.h"
#include "util/file.h"
#include "util/progress.h"

namespace proctor::cli {
namespace {

void InspectModel(const std::string& spec, const std::string& json_path) {
  const LoadedModel model = LoadModel(spec);
  const ModelSummary summary = SummarizeModel(model);
  fmt::print("{}", FormatModelSummary(summary));
  if (!json_path.empty()) {
    WriteFileAtomic(json_path, ModelSummaryToJson(summary).dump(2) + "\n");
    if (!Globals().quiet) fmt::print(stderr, "wrote {}\n", json_path);
  }
}

}  // namespace

void RegisterInspectVerb(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  auto* verb = app.add_subcommand(
      "inspect",
      "Show a reference-logits dump's manifest and sizes and check every record, or describe a "
      "model (architecture, weight types, bits per weight, sizes)");
  verb->add_option("path", *dir,
                   "Dump directory (manifest.json, tokens.bin, seq-<i>.bin), or a model "
                   "(directory with config.json, .gguf file, cached HF id)")
      ->required();
  verb->add_option("--json", *json_path, "Models: also write the summary as JSON to this file");
  verb->callback([dir, json_path] {
    // A model: a directory with config.json (and no dump manifest), a file (.gguf), or a name
    // that is not a path (a cached HF id). Any other directory is read as a dump.
    namespace fs = std::filesystem;
    const fs::path path(*dir);
    const bool is_model = fs::is_directory(path) ? fs::exists(path / "config.json") &&
                                                       !fs::exists(path / "manifest.json")
                                                 : true;
    if (is_model) {
      InspectModel(*dir, *json_path);
      return;
    }
    if (!json_path->empty()) {
      Fail("cli", "{}: --json describes models; this is a reference-logits dump", *dir);
    }
    const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(*dir);
    const ReferenceLogitsManifest& m = dump.manifest();
    fmt::print("reference-logits dump {}\n", dump.dir().string());
    fmt::print("  format_version     {}\n", m.format_version);
    fmt::print("  model              {}\n", m.model);
    fmt::print("  corpus_sha256      {}\n", m.corpus_sha256);
    if (m.tokens_sha256)
      fmt::print("  tokens_sha256      {} (tokens.bin, verified)\n", *m.tokens_sha256);
    fmt::print("  ctx_len            {}\n", m.ctx_len);
    fmt::print("  n_seqs             {}\n", m.n_seqs);
    fmt::print("  top_k              {}\n", m.top_k);
    fmt::print("  positions_per_seq  {} (from seq-0.bin)\n", dump.positions());
    if (m.created) fmt::print("  created            {}\n", *m.created);
    if (m.notes) fmt::print("  notes              {}\n", *m.notes);
    uint64_t total = std::filesystem::file_size(dump.ManifestPath()) +
                     std::filesystem::file_size(dump.TokensPath());
    for (int64_t s = 0; s < dump.n_seqs(); ++s)
      total += std::filesystem::file_size(dump.SequencePath(s));
    fmt::print("  record size        {} bytes\n", dump.record_bytes());
    fmt::print("  sequence file size {} bytes ({} records)\n",
               dump.record_bytes() * static_cast<uint64_t>(dump.positions()), dump.positions());
    fmt::print("  total size         {:.1f} MB ({} bytes)\n", total / 1e6, total);
    fmt::print("  label              {}\n", dump.Label());
    for (const auto& w : dump.warnings()) fmt::print("  warning: {}\n", w);
    std::fflush(stdout);
    Progress progress({.label = "inspect",
                       .unit = "records",
                       .total = static_cast<uint64_t>(dump.n_seqs() * dump.positions()),
                       .mode = Globals().quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto});
    const IntegrityReport report = CheckReferenceLogitsIntegrity(dump, &progress);
    progress.Finish();
    fmt::print("integrity: OK ({} records in {} sequence files checked)\n", report.records_checked,
               report.sequences_checked);
  });
}

}  // namespace proctor::cli
