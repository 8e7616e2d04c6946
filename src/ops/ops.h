// The engine's compute kernels in one include: matrix products, norms, rotary embeddings,
// attention, elementwise ops and row decoding.
#pragma once

#include "ops/attention.h"    // IWYU pragma: export
#include "ops/convert.h"      // IWYU pragma: export
#include "ops/elementwise.h"  // IWYU pragma: export
#include "ops/matmul.h"       // IWYU pragma: export
#include "ops/norm.h"         // IWYU pragma: export
#include "ops/rope.h"         // IWYU pragma: export
