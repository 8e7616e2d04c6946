// `proctor inspect DIR`: a reference-logits dump's manifest and sizes, then a full integrity
// check of every file and record. Exits non-zero with the reason and the file on any problem.
#include <fmt/format.h>

#include "cli/verbs.h"
#include "eval/ref_logits.h"
#include "eval/ref_logits_integrity.h"
#include "util/progress.h"

namespace proctor::cli {

void RegisterInspectVerb(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* verb = app.add_subcommand(
      "inspect", "Show a reference-logits dump's manifest and sizes, and check every record");
  verb->add_option("dir", *dir, "Dump directory (manifest.json, tokens.bin, seq-<i>.bin)")
      ->required();
  verb->callback([dir] {
    const ReferenceLogitsDump dump = ReferenceLogitsDump::Open(*dir);
    const ReferenceLogitsManifest& m = dump.manifest();
    fmt::print("reference-logits dump {}\n", dump.dir().string());
    fmt::print("  format_version     {}\n", m.format_version);
    fmt::print("  model              {}\n", m.model);
    fmt::print("  corpus_sha256      {}\n", m.corpus_sha256);
    fmt::print("  ctx_len            {}\n", m.ctx_len);
    fmt::print("  n_seqs             {}\n", m.n_seqs);
    fmt::print("  top_k              {}\n", m.top_k);
    fmt::print("  positions_per_seq  {} (from seq-0.bin)\n", dump.positions());
    if (m.created) fmt::print("  created            {}\n", *m.created);
    if (m.notes) fmt::print("  notes              {}\n", *m.notes);
    uint64_t total = std::filesystem::file_size(dump.ManifestPath()) +
                     std::filesystem::file_size(dump.TokensPath());
    for (int64_t s = 0; s < dump.n_seqs(); ++s) total += std::filesystem::file_size(dump.SequencePath(s));
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
