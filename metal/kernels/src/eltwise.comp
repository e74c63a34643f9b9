#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise ops over n values. b is indexed modulo nb, which broadcasts a
// single row of b over every row of a (nb == n when b has all rows).
// op: 0 add, 1 mul, 2 scale by f, 3 softcap tanh(a/f)*f, 4 GELU (tanh
// approximation), 5 copy, 6 SiLU x*sigmoid(x).
// EXT builds eltx: the same op followed by an epilogue of further
// elementwise ops on each value (src/epi.glsl), a chain the backend
// recorded as separate launches.
layout(local_size_x = 256) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;
    uint nb;
    uint op;
    float f;
#ifdef EXT
    uint nepi;   // epilogue ops
    uint pad0, pad1, pad2;
    uvec4 epi[6];
#endif
} p;

layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer Bv { float b[]; };
#ifdef EXT
layout(set = 0, binding = 3) buffer D { float dst[]; };
layout(set = 0, binding = 4) buffer B4 { float b4[]; };
layout(set = 0, binding = 5) buffer B5 { float b5[]; };
layout(set = 0, binding = 6) buffer B6 { float b6[]; };
layout(set = 0, binding = 7) buffer B7 { float b7[]; };

float ldv(uint s, uint i) {
    switch (s) {
    case 1u: return a[i];
    case 2u: return b[i];
    case 3u: return dst[i];
    case 4u: return b4[i];
    case 5u: return b5[i];
    case 6u: return b6[i];
    default: return b7[i];
    }
}

void stv(uint s, uint i, float v) {
    switch (s) {
    case 3u: dst[i] = v; break;
    case 4u: b4[i] = v; break;
    case 5u: b5[i] = v; break;
    case 6u: b6[i] = v; break;
    default: b7[i] = v; break;
    }
}

#include "epi.glsl"
#else
layout(set = 0, binding = 3) writeonly buffer D { float dst[]; };
#endif

void main() {
    uint i = linear_id();
    if (i >= p.n) {
        return;
    }
    float x = a[p.ob1 + i];
    float y;
    switch (p.op) {
    case 0u:
        y = x + b[p.ob2 + i % p.nb];
        break;
    case 1u:
        y = x * b[p.ob2 + i % p.nb];
        break;
    case 2u:
        y = x * p.f;
        break;
    case 3u:
        y = safe_tanh(x / p.f) * p.f;
        break;
    case 4u:
        y = 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        break;
    case 6u:
        // x / (1 + e^-x); exp overflows to inf for x < -88, giving -0.
        y = x / (1.0 + exp(-x));
        break;
    default:
        y = x;
        break;
    }
#ifdef EXT
    y = epi_run(y, i);
#endif
    dst[p.ob3 + i] = y;
}
