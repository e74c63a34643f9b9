#version 450
#extension GL_GOOGLE_include_directive : require
// Embedding gather: dst[i, k] = W[ids[i], k] dequantized to F32. bits is 0
// for a dense table of dtype wdt, else 2, 4 or 8 with scales and biases of
// dtype sdt per group of gsize inputs. Reads only the rows named by ids.
// Grid: x covers the n_in columns, y the ids.
layout(local_size_x = 64) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n_in;
    uint n_ids;
    uint bits;
    uint gsize;
    uint sdt;
    uint wdt;
} p;

layout(set = 0, binding = 1) readonly buffer I { uint ids[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(set = 0, binding = 3) readonly buffer S { uint sc[]; };
layout(set = 0, binding = 4) readonly buffer B { uint bi[]; };
layout(set = 0, binding = 5) writeonly buffer D { float dst[]; };

void main() {
    uint k = gl_GlobalInvocationID.x;
    uint i = gl_WorkGroupID.y;
    if (k >= p.n_in || i >= p.n_ids) {
        return;
    }
    uint row = ids[p.ob1 + i];
    float v;
    if (p.bits == 0u) {
        v = LOADF(w, p.ob2 + row * p.n_in + k, p.wdt);
    } else {
        uint per = 32u / p.bits;
        uint word = w[p.ob2 + row * (p.n_in / per) + k / per];
        float q = float((word >> ((k % per) * p.bits)) & ((1u << p.bits) - 1u));
        uint si = row * (p.n_in / p.gsize) + k / p.gsize;
        v = LOADF(sc, p.ob3 + si, p.sdt) * q + LOADF(bi, p.ob4 + si, p.sdt);
    }
    dst[p.ob5 + i * p.n_in + k] = v;
}
