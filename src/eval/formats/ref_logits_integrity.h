// A full integrity check of a reference-logits dump (what `proctor inspect` runs): beyond what
// Open() validates, every record of every sequence is read and checked.
#pragma once

#include <cstdint>

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

// Half the fp16 spacing at |v| (the most fp16 rounding can move v).
double HalfF16Spacing(float v);

}  // namespace proctor
