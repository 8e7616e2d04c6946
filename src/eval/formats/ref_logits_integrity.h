// A full integrity check of a reference-logits dump (what `proctor inspect` runs): beyond what
// Open() validates, every record of every sequence is read and checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/formats/ref_logits.h"

namespace proctor {

class Progress;

struct IntegrityReport {
  int64_t records_checked = 0;
  int64_t sequences_checked = 0;
};

// Checks, for every record: indices non-negative and distinct, logits non-increasing (no NaN),
// logsumexp finite and not below the top logit by more than fp16 rounding; and that token ids
// are non-negative. Throws Error("[ref-logits] ...") naming the file, sequence and record.
IntegrityReport CheckReferenceLogitsIntegrity(const ReferenceLogitsDump& dump,
                                              Progress* progress = nullptr);

// The per-record part of that check, for record `r` of `records` (`file` and `record` name it in
// the error): what every reader of records runs on each one before using it. `seen` is scratch
// (kept between calls; grows to the largest index).
void CheckReferenceRecord(const ReferenceRecords& records, int64_t r, const std::string& file,
                          int64_t record, std::vector<uint8_t>* seen);

// Half the fp16 spacing at |v| (the most fp16 rounding can move v).
double HalfF16Spacing(float v);

}  // namespace proctor
