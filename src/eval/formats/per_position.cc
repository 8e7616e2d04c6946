#include "eval/formats/per_position.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include "util/error.h"
#include "util/file.h"

namespace proctor {
namespace {

static_assert(std::endian::native == std::endian::little, "the file format is little-endian");
constexpr const char* kComponent = "per-position";

// Record layout (offsets in bytes):
//   0 u32 seq           4 u32 position        8 f64 kl            16 f64 tail_kl
//  24 f64 mass         32 f64 candidate_nll  40 f64 teacher_nll  48 i32 next_token
//  52 i32 candidate_argmax                   56 i32 teacher_argmax
//  60 u8 top1          61 u8[3] reserved (0) 64 f64 teacher_top1_probability (version 2)
template <typename T>
void Put(uint8_t* base, size_t offset, T value) {
  std::memcpy(base + offset, &value, sizeof(T));
}
template <typename T>
T Get(const uint8_t* base, size_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}

}  // namespace

void WritePerPositionFile(const std::filesystem::path& path, PerPositionHeader header,
                          const std::vector<std::vector<PositionScore>>& per_sequence) {
  header.n_seqs = per_sequence.size();
  header.record_count = 0;
  for (const auto& seq : per_sequence) header.record_count += seq.size();
  // Header: 0 magic[8], 8 u32 version, 12 u32 header_bytes, 16 u32 record_bytes, 20 u32 flags,
  // 24 u64 record_count, 32 u64 n_seqs, 40 u64 positions_per_seq, 48 u64 top_k, 56 u64 vocab.
  uint8_t head[kPerPositionHeaderBytes] = {};
  std::memcpy(head, kPerPositionMagic, 8);
  Put<uint32_t>(head, 8, kPerPositionVersion);
  Put<uint32_t>(head, 12, kPerPositionHeaderBytes);
  Put<uint32_t>(head, 16, kPerPositionRecordBytes);
  Put<uint32_t>(head, 20, header.flags);
  Put<uint64_t>(head, 24, header.record_count);
  Put<uint64_t>(head, 32, header.n_seqs);
  Put<uint64_t>(head, 40, header.positions_per_seq);
  Put<uint64_t>(head, 48, header.top_k);
  Put<uint64_t>(head, 56, header.vocab);
  AtomicFileWriter writer(path);
  writer.Write(std::span<const uint8_t>(head, sizeof(head)));
  std::vector<uint8_t> block;
  for (size_t s = 0; s < per_sequence.size(); ++s) {
    const auto& seq = per_sequence[s];
    block.assign(seq.size() * kPerPositionRecordBytes, 0);
    for (size_t p = 0; p < seq.size(); ++p) {
      uint8_t* rec = block.data() + p * kPerPositionRecordBytes;
      const PositionScore& v = seq[p];
      Put<uint32_t>(rec, 0, static_cast<uint32_t>(s));
      Put<uint32_t>(rec, 4, static_cast<uint32_t>(p));
      Put<double>(rec, 8, v.kl);
      Put<double>(rec, 16, v.tail_kl);
      Put<double>(rec, 24, v.mass);
      Put<double>(rec, 32, v.candidate_nll);
      Put<double>(rec, 40, v.teacher_nll);
      Put<int32_t>(rec, 48, v.next_token);
      Put<int32_t>(rec, 52, v.candidate_argmax);
      Put<int32_t>(rec, 56, v.teacher_argmax);
      Put<uint8_t>(rec, 60, v.top1 ? 1 : 0);
      Put<double>(rec, 64, v.teacher_top1_probability);
    }
    writer.Write(std::span<const uint8_t>(block));
  }
  writer.Commit();
}

PerPositionFile ReadPerPositionFile(const std::filesystem::path& path) {
  return ParsePerPositionFile(ReadFileToString(path), path);
}

PerPositionFile ParsePerPositionFile(std::string_view bytes, const std::filesystem::path& path) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < kPerPositionHeaderBytes) {
    Fail(kComponent, "'{}' is {} bytes, shorter than the {}-byte header", path.string(),
         bytes.size(), kPerPositionHeaderBytes);
  }
  if (std::memcmp(data, kPerPositionMagic, 8) != 0) {
    Fail(kComponent, "'{}' does not start with the magic \"PROCKLPP\" (not a per-position file)",
         path.string());
  }
  const auto version = Get<uint32_t>(data, 8);
  if (version != 1 && version != kPerPositionVersion) {
    Fail(kComponent, "'{}' has version {}; this reader implements versions 1 and {}", path.string(),
         version, kPerPositionVersion);
  }
  const uint64_t record_size = version == 1 ? kPerPositionV1RecordBytes : kPerPositionRecordBytes;
  const auto header_bytes = Get<uint32_t>(data, 12);
  const auto record_bytes = Get<uint32_t>(data, 16);
  if (header_bytes != kPerPositionHeaderBytes || record_bytes != record_size) {
    Fail(kComponent, "'{}' declares a {}-byte header and {}-byte records; version {} has {} and {}",
         path.string(), header_bytes, record_bytes, version, kPerPositionHeaderBytes, record_size);
  }
  PerPositionFile file;
  PerPositionHeader& h = file.header;
  h.flags = Get<uint32_t>(data, 20);
  h.record_count = Get<uint64_t>(data, 24);
  h.n_seqs = Get<uint64_t>(data, 32);
  h.positions_per_seq = Get<uint64_t>(data, 40);
  h.top_k = Get<uint64_t>(data, 48);
  h.vocab = Get<uint64_t>(data, 56);
  const uint64_t body = bytes.size() - kPerPositionHeaderBytes;
  if (h.record_count > body / record_size || body != h.record_count * record_size) {
    Fail(kComponent, "'{}' is {} bytes; a header saying {} records needs {}", path.string(),
         bytes.size(), h.record_count,
         h.record_count > body / record_size
             ? std::string("more")
             : std::to_string(kPerPositionHeaderBytes + h.record_count * record_size));
  }
  file.records.resize(h.record_count);
  for (uint64_t i = 0; i < h.record_count; ++i) {
    const uint8_t* rec = data + kPerPositionHeaderBytes + i * record_size;
    PerPositionRecord& r = file.records[i];
    r.seq = Get<uint32_t>(rec, 0);
    r.position = Get<uint32_t>(rec, 4);
    r.score.kl = Get<double>(rec, 8);
    r.score.tail_kl = Get<double>(rec, 16);
    r.score.mass = Get<double>(rec, 24);
    r.score.candidate_nll = Get<double>(rec, 32);
    r.score.teacher_nll = Get<double>(rec, 40);
    r.score.next_token = Get<int32_t>(rec, 48);
    r.score.candidate_argmax = Get<int32_t>(rec, 52);
    r.score.teacher_argmax = Get<int32_t>(rec, 56);
    const auto top1 = Get<uint8_t>(rec, 60);
    if (top1 > 1 || rec[61] != 0 || rec[62] != 0 || rec[63] != 0) {
      Fail(kComponent, "'{}' record {}: top1 byte {} (0 or 1) and reserved bytes {} {} {} (0)",
           path.string(), i, top1, rec[61], rec[62], rec[63]);
    }
    r.score.top1 = top1 == 1;
    r.score.teacher_top1_probability =
        version == 1 ? std::numeric_limits<double>::quiet_NaN() : Get<double>(rec, 64);
  }
  return file;
}

}  // namespace proctor
