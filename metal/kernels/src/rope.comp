#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE in place on x[n, heads, head_dim], over the first dims values of
// each head, at absolute positions pos0 + row. Pair i turns by
// (pos0 + row) * invf[i]; the table comes from the host (the model's
// tensor.Rotary). Pairs are (i, i + dims/2) with the half-split
// (rotate_half) convention, or (2i, 2i + 1) when interleaved != 0. The
// angle is reduced modulo 2*pi in three exact-product fma steps before
// sin/cos so large positions keep their accuracy.
layout(local_size_x = 64) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint rows;
    uint heads;
    uint head_dim;
    uint half_dims;
    uint pos0;
    uint interleaved;
} p;

layout(set = 0, binding = 1) buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer F { float invf[]; };

void main() {
    uint id = linear_id();
    uint total = p.rows * p.heads * p.half_dims;
    if (id >= total) {
        return;
    }
    uint i = id % p.half_dims;
    uint rh = id / p.half_dims;  // row * heads + head
    uint row = rh / p.heads;
    float theta = float(p.pos0 + row) * invf[p.ob2 + i];
    // Cody-Waite reduction: C1 = 6.25 and C2 = 17/512 have few enough
    // significant bits that k*C1 and k*C2 are exact for k < 2^18 (positions
    // below 2^20 at any frequency), so only the tiny last term rounds.
    // Each step is an explicit fma: one rounding of an exact product and
    // sum, whatever the compiler does with contraction or reassociation
    // (GLSL `precise` reaches MSL only as optnone helper functions).
    float k = floor(theta * 0.15915494309189535 + 0.5);
    float r = fma(-k, 6.25, theta);
    r = fma(-k, 0.033203125, r);
    r = fma(-k, -1.781781975296326e-05, r);
    float c = cos(r);
    float s = sin(r);
    uint b1 = p.ob1 + rh * p.head_dim + i;
    uint b2 = b1 + p.half_dims;
    if (p.interleaved != 0u) {
        b1 = p.ob1 + rh * p.head_dim + 2u * i;
        b2 = b1 + 1u;
    }
    float x1 = x[b1];
    float x2 = x[b2];
    x[b1] = x1 * c - x2 * s;
    x[b2] = x2 * c + x1 * s;
}
