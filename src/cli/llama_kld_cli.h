// llama.cpp interop in the CLI (docs/README.md "llama.cpp interop"): `proctor kl
// --reference-logits FILE.kld` scores against a llama-perplexity KL-divergence base file, and
// `proctor dump --format llama.cpp --out FILE.kld` writes one. kl_verb.cc / dump_verb.cc only
// dispatch here.
#pragma once

#include <cstdint>
#include <string>

#include "cli/engine_flags.h"

namespace proctor::cli {

// True when `path` is a regular file whose name ends in ".kld" or whose first bytes are
// "_logits_" (a dump directory gives false).
bool IsLlamaKldReference(const std::string& path);

struct LlamaKldKlArgs {
  std::string base_file;
  std::string candidate;
  int64_t n = 0;     // chunks to score; 0 = all
  std::string json;          // results file, "" = none
  std::string per_position;  // not available for .kld references: an error when set
  EngineFlags engine;
};
// Scores and prints llama.cpp's statistics; writes --json (results envelope) when asked.
void RunKlOnLlamaKld(const LlamaKldKlArgs& args);

struct LlamaKldDumpArgs {
  std::string teacher;
  std::string corpus;
  std::string out;  // the .kld file
  int64_t seq_start = 0;
  int64_t seq_end = -1;
  std::string json;
  EngineFlags engine;
};
// Writes the base file and prints the teacher's perplexity from exact logits and as stored.
void RunDumpLlamaKld(const LlamaKldDumpArgs& args);

}  // namespace proctor::cli
