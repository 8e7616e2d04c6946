// Top-k selection for logits_stats.h: an exact radix select (SelectTopK) and the reference it
// must equal bit for bit (SelectTopKScalar: nth_element + sort with an indirect comparator).
//
// SelectTopK maps every float to an order-preserving uint32 key (larger float -> larger key),
// finds the k-th largest key with up to three histogram levels (the key's top 11 bits over the
// whole row, then the next 11 and the last 10 bits over the shrinking candidate set), keeps the
// elements above that threshold plus the first ties at it in index order (a threshold bin of at
// most 48 candidates is sorted directly instead of refined further), and sorts the k
// survivors largest first with ties by lower index: exactly the reference's order. The sort is
// a stable LSD radix sort by key (bytes where all survivors agree are skipped); it keeps ties in
// index order because equal keys fall in the same histogram bins at every level, so they were
// collected by the same in-order scan. Small k sort (key, ~index) pairs with std::sort instead.
//
// Zeros: the reference compares with float `>`, for which -0 == +0, so a -0 and a +0 tie and
// the lower index comes first. The key maps -0 to the key of +0 to give the same order.
// Denormals are ordered like any other float (the process does not set flush-to-zero or
// denormals-are-zero; with DAZ the float comparison, and so the reference, would treat them as
// zeros). Infinities are ordinary keys; NaN is not allowed (the callers check).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "ops/logits_stats.h"
#include "util/error.h"

namespace proctor::ops {
namespace {

// Order-preserving key: for floats a > b (float comparison, no NaN) iff Key(a) > Key(b), and
// Key(-0) == Key(+0). Positive floats get the sign bit set; negative ones are inverted.
inline uint32_t Key(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  bits = bits == 0x80000000u ? 0u : bits;  // -0 -> +0
  const uint32_t negative_mask = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31);
  return bits ^ (negative_mask | 0x80000000u);
}

// The three histogram levels over the 32 key bits: [31..21], [20..10], [9..0].
constexpr int kLevelShift[3] = {21, 10, 0};
constexpr uint32_t kLevelBins[3] = {2048, 2048, 1024};

// Per-thread buffers reused across calls (a dump selects one row after another). The branchless
// appends below write one element past the counted ones, hence the +1 sizes.
struct TopKScratch {
  std::vector<uint32_t> keys;                       // [n] Key(x[i])
  std::array<uint32_t, 4 * 2048> sub_histograms{};  // [4][2048] level 0, interleaved rows
  std::array<uint32_t, 2048> histogram{};
  std::vector<int32_t> at_or_above;  // [<= n + 1] indices whose key is >= the threshold bin's
  std::vector<int32_t> candidates;   // [in bin + 1] indices whose key prefix equals the threshold's
  std::vector<uint64_t> packed;      // [k + 1] survivors: (~key << 32) | index (ascending = wanted)
  std::vector<uint64_t> sort_buffer;  // [k] the radix sort's other half
  std::vector<uint64_t> direct;       // [<= kDirectSortMaxCandidates] candidates sorted directly
};

// Rows at least this long build the level-0 histogram in four interleaved copies (consecutive
// elements often share a bin; one copy would serialize on its counter).
constexpr int64_t kInterleavedHistogramMinN = 4096;

// Threshold-bin candidates up to this many are sorted directly (no further histogram level).
constexpr int64_t kDirectSortMaxCandidates = 48;

// Below this k the survivors are sorted with std::sort on the whole packed value.
constexpr int64_t kRadixSortMinK = 64;

// Sorts packed[0..k) ascending by the upper 32 bits, stably (LSD, one byte per pass, passes
// whose byte is the same in every element skipped). The result ends in packed.
void RadixSortByUpperHalf(std::vector<uint64_t>& packed, std::vector<uint64_t>& buffer, int64_t k) {
  uint32_t counts[4][256] = {};
  for (int64_t j = 0; j < k; ++j) {
    const uint32_t upper = static_cast<uint32_t>(packed[j] >> 32);
    for (int b = 0; b < 4; ++b) ++counts[b][(upper >> (8 * b)) & 0xFF];
  }
  buffer.resize(static_cast<size_t>(k));
  uint64_t* from = packed.data();
  uint64_t* to = buffer.data();
  for (int b = 0; b < 4; ++b) {
    const int shift = 32 + 8 * b;
    if (counts[b][(from[0] >> shift) & 0xFF] == static_cast<uint32_t>(k)) continue;
    uint32_t offset[256];
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      offset[d] = sum;
      sum += counts[b][d];
    }
    for (int64_t j = 0; j < k; ++j) to[offset[(from[j] >> shift) & 0xFF]++] = from[j];
    std::swap(from, to);
  }
  if (from != packed.data()) std::copy(from, from + k, packed.data());
}

// The bin b (from the top) holding the `need`-th largest element, scanning down from bin
// `highest` (every bin above it is empty): on return *above counts the elements in bins above b
// (*above < need <= *above + histogram[b]).
uint32_t FindThresholdBin(const uint32_t* histogram, uint32_t highest, int64_t need,
                          int64_t* above) {
  int64_t count = 0;
  uint32_t b = highest + 1;  // bins [b, highest] are counted
  // Whole groups of 8 bins that do not reach `need` are skipped with one (vectorized) sum: rows
  // whose values straddle zero leave hundreds of empty bins (tiny magnitudes) in between.
  constexpr uint32_t kGroup = 8;
  while (b >= kGroup) {
    uint32_t group = 0;
    for (uint32_t g = 1; g <= kGroup; ++g) group += histogram[b - g];
    if (count + group >= need) break;
    count += group;
    b -= kGroup;
  }
  while (b-- > 0) {
    if (count + histogram[b] >= need) {
      *above = count;
      return b;
    }
    count += histogram[b];
  }
  CHECK_MSG(false, "top-k threshold not found (need {} of {})", need, count);
  return 0;
}

}  // namespace

void SelectTopK(const float* x, int64_t n, int64_t k, int32_t* indices) {
  CHECK_MSG(0 < k && k <= n, "k={} n={}", k, n);
  CHECK(n <= std::numeric_limits<int32_t>::max());
  thread_local TopKScratch scratch;
  uint32_t* histogram = scratch.histogram.data();

  // Level 0 over the whole row: histogram of the key's top 11 bits.
  scratch.keys.resize(static_cast<size_t>(n));
  uint32_t* keys = scratch.keys.data();
  for (int64_t i = 0; i < n; ++i) keys[i] = Key(x[i]);
  constexpr int kShift0 = kLevelShift[0];
  uint32_t highest_bin = kLevelBins[0] - 1;  // no bin above it is populated
  if (n >= kInterleavedHistogramMinN) {
    uint32_t* sub = scratch.sub_histograms.data();
    std::fill_n(sub, 4 * kLevelBins[0], 0u);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int c = 0; c < 4; ++c) ++sub[c * kLevelBins[0] + (keys[i + c] >> kShift0)];
    }
    for (; i < n; ++i) ++sub[keys[i] >> kShift0];
    for (uint32_t b = 0; b < kLevelBins[0]; ++b) {
      histogram[b] =
          sub[b] + sub[kLevelBins[0] + b] + sub[2 * kLevelBins[0] + b] + sub[3 * kLevelBins[0] + b];
    }
  } else {
    std::fill_n(histogram, kLevelBins[0], 0u);
    highest_bin = 0;
    for (int64_t i = 0; i < n; ++i) {
      ++histogram[keys[i] >> kShift0];
      highest_bin = std::max(highest_bin, keys[i] >> kShift0);  // short rows: saves the scan
    }
  }
  int64_t above_bin = 0;
  const uint32_t top_bin = FindThresholdBin(histogram, highest_bin, k, &above_bin);
  const int64_t in_bin = histogram[top_bin];
  // Indices at or above the threshold bin, in index order. Most elements are below it: blocks
  // of 16 with none at or above are skipped after a (vectorized) test, the others appended
  // branchlessly.
  const uint32_t bin_lowest_key = top_bin << kShift0;
  scratch.at_or_above.resize(static_cast<size_t>(above_bin + in_bin + 1));
  int32_t* at_or_above = scratch.at_or_above.data();
  int64_t n_at_or_above = 0;
  const auto append_range = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      at_or_above[n_at_or_above] = static_cast<int32_t>(i);
      n_at_or_above += keys[i] >= bin_lowest_key;
    }
  };
  constexpr int64_t kSkipBlock = 16;
  int64_t block = 0;
  for (; block + kSkipBlock <= n; block += kSkipBlock) {
    uint32_t any = 0;
    for (int64_t c = 0; c < kSkipBlock; ++c) any |= keys[block + c] >= bin_lowest_key;
    if (any) append_range(block, block + kSkipBlock);
  }
  append_range(block, n);
  CHECK(n_at_or_above == above_bin + in_bin);
  // Split them: above the bin -> survivors (packed for the final sort), in it -> candidates.
  scratch.packed.resize(static_cast<size_t>(k + 1));
  uint64_t* packed = scratch.packed.data();
  const auto pack = [](uint32_t key, int64_t index) {
    return (static_cast<uint64_t>(~key) << 32) | static_cast<uint32_t>(index);
  };
  int64_t survivors = 0;
  scratch.candidates.resize(static_cast<size_t>(in_bin + 1));
  int32_t* candidates = scratch.candidates.data();
  int64_t n_candidates = 0;
  for (int64_t j = 0; j < n_at_or_above; ++j) {
    const int32_t i = at_or_above[j];
    const bool above = (keys[i] >> kShift0) > top_bin;
    packed[survivors] = pack(keys[i], i);
    candidates[n_candidates] = i;
    survivors += above;
    n_candidates += !above;
  }
  // Levels 1 and 2 over the candidates (index order is kept), until the threshold bin's elements
  // are all needed (then every candidate survives) or the full key is known.
  // A few candidates are sorted directly instead: packed (~key, index) ascending is the wanted
  // order, so the first `need` of them are the survivors.
  int level = 0;
  while (k - survivors < n_candidates && level < 2) {
    if (n_candidates <= kDirectSortMaxCandidates) {
      uint64_t* sorted = packed + survivors;
      scratch.direct.resize(static_cast<size_t>(n_candidates));
      for (int64_t c = 0; c < n_candidates; ++c) {
        scratch.direct[c] = pack(keys[candidates[c]], candidates[c]);
      }
      std::sort(scratch.direct.begin(), scratch.direct.end());
      const int64_t need = k - survivors;
      std::copy_n(scratch.direct.begin(), need, sorted);
      survivors += need;
      n_candidates = 0;
      break;
    }
    ++level;
    const int shift = kLevelShift[level];
    const uint32_t mask = kLevelBins[level] - 1;
    std::fill_n(histogram, kLevelBins[level], 0u);
    uint32_t highest = 0;
    for (int64_t c = 0; c < n_candidates; ++c) {
      const uint32_t b = (keys[candidates[c]] >> shift) & mask;
      ++histogram[b];
      highest = std::max(highest, b);
    }
    int64_t above = 0;  // (equals the survivors this level adds)
    const uint32_t bin = FindThresholdBin(histogram, highest, k - survivors, &above);
    int64_t kept = 0;
    for (int64_t c = 0; c < n_candidates; ++c) {
      const int32_t i = candidates[c];
      const uint32_t b = (keys[i] >> shift) & mask;
      packed[survivors] = pack(keys[i], i);
      candidates[kept] = i;  // kept <= c: the list is compacted in place, in index order
      survivors += b > bin;
      kept += b == bin;
    }
    n_candidates = kept;
  }
  // The remaining candidates either all survive, or (full key known) all tie at the threshold
  // and the lowest indices are taken: they are in index order.
  const int64_t take = std::min(n_candidates, k - survivors);
  for (int64_t c = 0; c < take; ++c) packed[survivors++] = pack(keys[candidates[c]], candidates[c]);
  CHECK_MSG(survivors == k, "top-k kept {} of {}", survivors, k);
  if (k < kRadixSortMinK) {
    std::sort(packed, packed + k);  // (~key, index) ascending: largest first, lower index first
  } else {
    RadixSortByUpperHalf(scratch.packed, scratch.sort_buffer, k);
    packed = scratch.packed.data();
  }
  for (int64_t j = 0; j < k; ++j)
    indices[j] = static_cast<int32_t>(static_cast<uint32_t>(packed[j]));
}

void SelectTopKScalar(const float* x, int64_t n, int64_t k, int32_t* indices) {
  CHECK_MSG(0 < k && k <= n, "k={} n={}", k, n);
  CHECK(n <= std::numeric_limits<int32_t>::max());
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const auto before = [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };
  if (k < n) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
  std::sort(order.begin(), order.begin() + k, before);
  std::copy(order.begin(), order.begin() + k, indices);
}

}  // namespace proctor::ops
