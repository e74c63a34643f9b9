#version 450
#extension GL_GOOGLE_include_directive : require
// Index of the largest value of each row (the first one on ties; NaN is
// never chosen), one workgroup per row, so greedy decoding returns one
// integer per step instead of the logits.
layout(local_size_x = 128) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;
    uint rows;
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint dst[]; };

shared float bv[gl_WorkGroupSize.x];
shared uint bi[gl_WorkGroupSize.x];

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.n;
    float best = uintBitsToFloat(0xff800000u);
    uint idx = 0xffffffffu;
    for (uint i = t; i < p.n; i += gl_WorkGroupSize.x) {
        float v = x[p.ob1 + base + i];
        if (v > best || (idx == 0xffffffffu && !isnan(v))) {
            best = v;
            idx = i;
        }
    }
    bv[t] = best;
    bi[t] = idx;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            float ov = bv[t + s];
            uint oi = bi[t + s];
            if (oi != 0xffffffffu && (bi[t] == 0xffffffffu || ov > bv[t] || (ov == bv[t] && oi < bi[t]))) {
                bv[t] = ov;
                bi[t] = oi;
            }
        }
        barrier();
    }
    if (t == 0u) {
        dst[p.ob2 + row] = bi[0] == 0xffffffffu ? 0u : bi[0];
    }
}
