#!/usr/bin/python3
"""Writes a copy of an F32 GGUF model whose weight matrices are rounded to a coarse grid, a
"simulated quantization" that stays F32 on disk (so llama.cpp and proctor both compute it in
f32 and agree to ~1e-5), for KL tests that need a candidate that differs from its teacher.

Every 2-D F32 tensor's rows are rounded symmetrically to BITS bits with one scale per row
(scale = max|row| / (2^(BITS-1) - 1)); 1-D tensors (norms) are kept. Metadata and layout are
copied byte for byte; only the tensor data changes. GGUF is parsed with struct (no gguf package).

usage: /usr/bin/python3 tools/perturb_gguf.py IN.gguf OUT.gguf [BITS=4]
"""
import struct
import sys

import numpy as np

SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
GGML_F32 = 0


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def skip_value(self, vtype):
        if vtype == 8:
            self.string()
        elif vtype == 9:
            etype, count = self.take("I"), self.take("Q")
            if etype in SCALAR_SIZES:
                self.pos += SCALAR_SIZES[etype] * count
            else:
                for _ in range(count):
                    self.skip_value(etype)
        else:
            self.pos += SCALAR_SIZES[vtype]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    bits = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    data = bytearray(open(src, "rb").read())
    r = Reader(bytes(data))
    if r.take("4s") != b"GGUF":
        sys.exit("%s is not a GGUF file" % src)
    version, n_tensors, n_kv = r.take("I"), r.take("Q"), r.take("Q")
    if version < 2:
        sys.exit("GGUF version %d is not supported" % version)
    alignment = 32
    for _ in range(n_kv):
        key, vtype = r.string(), r.take("I")
        if key == "general.alignment" and vtype == 4:
            alignment = r.take("I")
        else:
            r.skip_value(vtype)
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        infos.append((name, dims, r.take("I"), r.take("Q")))
    data_start = (r.pos + alignment - 1) // alignment * alignment
    levels = 2 ** (bits - 1) - 1
    changed = 0
    for name, dims, ggml_type, offset in infos:
        if ggml_type != GGML_F32 or len(dims) != 2:
            continue
        start = data_start + offset
        count = dims[0] * dims[1]
        rows = np.frombuffer(bytes(data[start:start + 4 * count]), dtype="<f4").reshape(
            dims[1], dims[0]).astype(np.float64)
        scale = np.abs(rows).max(axis=1, keepdims=True) / levels
        scale[scale == 0] = 1
        rounded = (np.clip(np.rint(rows / scale), -levels, levels) * scale).astype("<f4")
        data[start:start + 4 * count] = rounded.tobytes()
        changed += 1
    open(dst, "wb").write(bytes(data))
    print("%s: %d of %d tensors rounded to %d bits per row" % (dst, changed, len(infos), bits))


if __name__ == "__main__":
    main()
