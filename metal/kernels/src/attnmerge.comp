#version 450
#extension GL_GOOGLE_include_directive : require
// Combines split-key attention partials, one workgroup per (head, query
// row): with each split's running max m_s, sum l_s and unnormalized output
// a_s, out = sum_s a_s e^(m_s - M) / sum_s l_s e^(m_s - M), M = max_s m_s.
// Splits that saw no visible key (m_s = -inf) contribute nothing.
layout(local_size_x = 128) in;
#include "common.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint hq;
    uint d;
    uint splits;
} p;

layout(set = 0, binding = 1) readonly buffer P { float part[]; };  // [nq, hq, splits, d + 2]
layout(set = 0, binding = 2) writeonly buffer D { float dst[]; };

void main() {
    uint h = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint row = r * p.hq + h;
    uint stride = p.d + 2u;
    uint base = p.ob1 + row * p.splits * stride;
    float mx = uintBitsToFloat(0xff800000u);
    for (uint s = 0u; s < p.splits; s++) {
        mx = max(mx, part[base + s * stride]);
    }
    float l = 0.0;
    for (uint s = 0u; s < p.splits; s++) {
        float ms = part[base + s * stride];
        if (!isinf(ms)) {
            l += part[base + s * stride + 1u] * exp(ms - mx);
        }
    }
    for (uint dim = gl_LocalInvocationID.x; dim < p.d; dim += gl_WorkGroupSize.x) {
        float a = 0.0;
        for (uint s = 0u; s < p.splits; s++) {
            float ms = part[base + s * stride];
            if (!isinf(ms)) {
                a += part[base + s * stride + 2u + dim] * exp(ms - mx);
            }
        }
        dst[p.ob2 + row * p.d + dim] = a / l;
    }
}
