// ReferenceLogitsWriter::AppendLogitsRows (a chunk's rows selected across a thread pool, one
// write): byte-identical to row-by-row AppendLogitsRow at 1, 2 and 3 threads and uneven chunks,
// indices equal to a stable-sort oracle, and the error for a NaN / infinite row names the first
// bad position. The asynchronous commit: a kill after the next sequence has records leaves the
// previous one on disk (see also ref_logits_test's kill-and-resume test).
#include "eval/formats/ref_logits_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "eval/testing_dumps.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/thread_pool.h"

namespace proctor {
namespace {

using testing::ReadBytes;
using testing::TempDir;

// Logits rows with plenty of ties (a third rounded to 1/2), signed zeros, and a -inf.
struct ChunkCase {
  int64_t vocab = 300, top_k = 37, ctx_len = 50, n_seqs = 2;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // [n_seqs, ctx_len, vocab]
  ChunkCase() {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (int64_t i = 0; i < n_seqs * ctx_len; ++i)
      tokens.push_back(static_cast<int32_t>(i % vocab));
    logits.resize(static_cast<size_t>(n_seqs * ctx_len * vocab));
    for (size_t i = 0; i < logits.size(); ++i) {
      logits[i] = normal(rng);
      if (i % 3 == 0) logits[i] = std::round(logits[i] * 2) / 2;
      if (i % 101 == 0) logits[i] = (i % 2) ? 0.0f : -0.0f;
      if (i % 97 == 0) logits[i] = -std::numeric_limits<float>::infinity();
    }
  }
  const float* Row(int64_t s, int64_t p) const { return logits.data() + (s * ctx_len + p) * vocab; }
  // rows x vocab starting at (s, p); may run past the last position (only rows asked are read).
  MatView View(int64_t s, int64_t p, int64_t rows) const {
    return MatView{.type = DType::kF32,
                   .rows = rows,
                   .cols = vocab,
                   .row_stride = static_cast<size_t>(vocab) * 4,
                   .data = reinterpret_cast<const uint8_t*>(Row(s, p))};
  }
  ReferenceLogitsWriterOptions Options(const std::filesystem::path& dir) const {
    return {.dir = dir,
            .model = "m",
            .corpus_sha256 = "00",
            .ctx_len = ctx_len,
            .n_seqs = n_seqs,
            .top_k = top_k,
            .created = "fixed"};
  }
};

std::map<std::string, std::string> DirectoryBytes(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    files[e.path().filename().string()] = ReadBytes(e.path());
  }
  return files;
}

void WriteRowByRow(const ChunkCase& c, const std::filesystem::path& dir) {
  ReferenceLogitsWriter writer(c.Options(dir), c.tokens);
  for (int64_t s = 0; s < c.n_seqs; ++s) {
    writer.BeginSequence(s);
    for (int64_t p = 0; p < writer.positions(); ++p) {
      writer.AppendLogitsRow(std::span<const float>(c.Row(s, p), static_cast<size_t>(c.vocab)));
    }
    writer.EndSequence();
  }
  writer.Finish();
}

void WriteInChunks(const ChunkCase& c, const std::filesystem::path& dir, int64_t chunk,
                   ThreadPool& pool) {
  ReferenceLogitsWriter writer(c.Options(dir), c.tokens);
  for (int64_t s = 0; s < c.n_seqs; ++s) {
    writer.BeginSequence(s);
    for (int64_t p = 0; p < writer.positions(); p += chunk) {
      const int64_t rows = std::min(chunk, writer.positions() - p);
      writer.AppendLogitsRows(c.View(s, p, chunk), rows, pool);
    }
    writer.EndSequence();
  }
  writer.Finish();
}

// #18 class 12: two writers into one directory would interleave their sequence files. The second
// is refused while the first lives (whatever its process), and a refused or finished writer lets
// the next one in.
TEST(WriterLock, OneWriterPerDirectory) {
  const ChunkCase c;
  const testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "dump";
  {
    ReferenceLogitsWriter first(c.Options(dir), c.tokens);
    EXPECT_NE(testing::ErrorOf([&] {
                ReferenceLogitsWriter second(c.Options(dir), c.tokens);
              }).find("is being written by another dump right now"),
              std::string::npos);
  }
  // The first writer is gone (unfinished: its in-progress file stays), so a resume may start.
  WriteRowByRow(c, dir);
  EXPECT_TRUE(std::filesystem::exists(dir / "manifest.json"));
}

// #18 class 7: the manifest records tokens.bin's sha256, and an edited token is refused when the
// dump is opened, naming the file and both hashes; a manifest without the key (older dumps, other
// writers) is still read.
TEST(WriterManifest, AnEditedTokenFileIsRefused) {
  const ChunkCase c;
  const testing::TempDir tmp;
  const std::filesystem::path dir = tmp.path() / "dump";
  WriteRowByRow(c, dir);
  const std::string tokens = ReadBytes(dir / "tokens.bin");
  const std::string recorded =
      nlohmann::json::parse(ReadBytes(dir / "manifest.json"))["tokens_sha256"];
  EXPECT_EQ(recorded, Sha256Hex(tokens));
  EXPECT_EQ(ReferenceLogitsDump::Open(dir).manifest().tokens_sha256, recorded);
  std::string edited = tokens;
  edited[5] = static_cast<char>(edited[5] ^ 1);
  std::ofstream(dir / "tokens.bin", std::ios::binary) << edited;
  const std::string error = testing::ErrorOf([&] { ReferenceLogitsDump::Open(dir); });
  EXPECT_NE(error.find((dir / "tokens.bin").string() + "' has sha256 " + Sha256Hex(edited)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("records tokens_sha256 " + recorded), std::string::npos) << error;
  auto manifest = nlohmann::ordered_json::parse(ReadBytes(dir / "manifest.json"));
  manifest.erase("tokens_sha256");
  std::ofstream(dir / "manifest.json") << manifest.dump(2);
  EXPECT_EQ(ReferenceLogitsDump::Open(dir).manifest().tokens_sha256, std::nullopt);
}

TEST(WriterChunks, SameBytesAsRowByRowAtEveryThreadCount) {
  const ChunkCase c;
  TempDir temp;
  WriteRowByRow(c, temp.path() / "rows");
  const auto expected = DirectoryBytes(temp.path() / "rows");
  ASSERT_EQ(expected.size(), 4u);  // tokens.bin, seq-0.bin, seq-1.bin, manifest.json
  for (const int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (const int64_t chunk : {int64_t{1}, int64_t{7}, int64_t{49}}) {
      const auto dir = temp.path() / fmt::format("t{}-c{}", threads, chunk);
      WriteInChunks(c, dir, chunk, pool);
      EXPECT_EQ(DirectoryBytes(dir), expected) << "threads " << threads << " chunk " << chunk;
    }
  }
  // The stored indices are the stable-sort top-k of each row (ties to the lower index).
  const std::string seq1 = expected.at("seq-1.bin");
  const size_t record_bytes = static_cast<size_t>(6 * c.top_k + 4);
  ASSERT_EQ(seq1.size(), record_bytes * static_cast<size_t>(c.ctx_len - 1));
  for (int64_t p = 0; p < c.ctx_len - 1; ++p) {
    const float* row = c.Row(1, p);
    std::vector<int32_t> order(static_cast<size_t>(c.vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    std::vector<int32_t> stored(static_cast<size_t>(c.top_k));
    std::memcpy(stored.data(), seq1.data() + p * record_bytes, stored.size() * 4);
    EXPECT_EQ(stored, std::vector<int32_t>(order.begin(), order.begin() + c.top_k)) << "p=" << p;
  }
}

TEST(WriterChunks, ARowWithANaNOrAnInfiniteMaximumNamesTheFirstBadPosition) {
  ChunkCase c;
  TempDir temp;
  ThreadPool pool(2);
  ReferenceLogitsWriter writer(c.Options(temp.path()), c.tokens);
  writer.BeginSequence(0);
  writer.AppendLogitsRows(c.View(0, 0, 10), 10, pool);
  c.logits[(12 * c.vocab) + 5] = std::numeric_limits<float>::infinity();  // position 12
  c.logits[(15 * c.vocab) + 9] = std::nanf("");                           // position 15
  try {
    writer.AppendLogitsRows(c.View(0, 10, 10), 10, pool);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 0 position 12: the logits row has maximum inf"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace proctor
