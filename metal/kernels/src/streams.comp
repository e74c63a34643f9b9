#version 450
#extension GL_GOOGLE_include_directive : require
// Gemma 3n AltUp stream ops over rows of width N, one invocation per output
// value:
// op 0, mix:  x [S, n, N], coef [n, R*S] -> dst [R, n, N],
//             dst[r, t, i] = sum_k coef[t, r*S + k] * x[k, t, i];
// op 1, add:  a, dst [S, n, N], b [n, N], coef [n, S],
//             dst[s, t, i] = a[s, t, i] + coef[t, s] * b[t, i];
// op 2, swap: x [S, n, N] -> dst [n, S, N] (the two leading axes).
layout(local_size_x = 256) in;
#include "common.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint op;
    uint S;
    uint n;
    uint N;
    uint R;
    uint total;
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer C { float coef[]; };
layout(set = 0, binding = 3) readonly buffer Bv { float b[]; };
layout(set = 0, binding = 4) buffer D { float dst[]; };

void main() {
    uint id = linear_id();
    if (id >= p.total) {
        return;
    }
    uint i = id % p.N;
    uint rest = id / p.N;
    if (p.op == 0u) {
        uint t = rest % p.n;
        uint r = rest / p.n;
        float s = 0.0;
        for (uint k = 0u; k < p.S; k++) {
            s += coef[p.ob2 + t * p.R * p.S + r * p.S + k] * x[p.ob1 + (k * p.n + t) * p.N + i];
        }
        dst[p.ob4 + id] = s;
    } else if (p.op == 1u) {
        uint t = rest % p.n;
        uint s = rest / p.n;
        dst[p.ob4 + id] = x[p.ob1 + id] + coef[p.ob2 + t * p.S + s] * b[p.ob3 + t * p.N + i];
    } else {
        // dst [n, S, N]: rest = bb * S + aa; source x[aa, bb, i].
        uint aa = rest % p.S;
        uint bb = rest / p.S;
        dst[p.ob4 + id] = x[p.ob1 + (aa * p.n + bb) * p.N + i];
    }
}
