// The activation buffers of a forward pass (runtime_model.h). They are kept per thread and reused
// by every layer and call: fresh multi-megabyte buffers cost page faults on first touch and, once
// two threads run, TLB shootdowns when they are unmapped again (together a quarter of prefill
// time).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"
#include "util/error.h"

namespace proctor::activations {

enum Buffer {
  kNormed,
  kQ,
  kK,
  kV,
  kQueryAndGate,  // q_proj's output when it also carries the attention output gate
  kAttended,
  kProjected,
  kGate,
  kUp,
  kDown,
  kMixed,         // gated DeltaNet: the q, k, v channels (conv input, then output)
  kMixerGate,     // gated DeltaNet: z
  kBeta,          // gated DeltaNet: b, then beta
  kDecay,         // gated DeltaNet: a, then g
  kRouterLogits,  // mixture of experts: the router's logits [T, experts]
  kExpertInput,   // mixture of experts: the rows routed to one expert
  kExpertsOut,    // mixture of experts: the weighted sum of the experts' outputs [T, hidden]
  kBufferCount
};

// A [rows, cols] f32 view of the calling thread's buffer `which` (contents undefined).
inline MutMatF32 Scratch(Buffer which, int64_t rows, int64_t cols) {
  thread_local Tensor buffers[kBufferCount];
  Tensor& buf = buffers[which];
  if (buf.rows() < rows * cols) buf = Tensor::F32(rows * cols, 1);
  return MutMatF32{rows, cols, cols, buf.f32()};
}

// Views an f32 [T, heads*D] buffer as [T*heads, D] (one row per head).
inline MutMatF32 PerHead(MutMatF32 m, int head_dim) {
  CHECK(m.stride == m.cols && m.cols % head_dim == 0);
  return MutMatF32{m.rows * (m.cols / head_dim), head_dim, head_dim, m.data};
}

}  // namespace proctor::activations
