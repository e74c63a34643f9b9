#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// normx: the row normalization of rmsnorm.comp (RMSNorm, or LayerNorm when
// center != 0, each with an optional weight and bias; one workgroup of
// 512 invocations per row), followed by ops the backend recorded as
// launches of their own after it: an epilogue of elementwise ops on each
// output (src/epi.glsl), then optionally a second RMSNorm of the row it
// stored, with its own weight (slot 4, so only without a bias), epsilon
// and scale, into another tensor (norm2).
layout(local_size_x = 512) in;
#include "common.glsl"

#include "reduce.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;      // row length
    uint rows;
    uint has_w;
    uint wdt;
    float eps;
    uint center;
    uint has_b;
    uint bdt;
    uint nepi;   // epilogue ops
    uint norm2;  // bit 0: the second norm; bit 1: it has a weight
    uint w2dt;   // dtype of that weight
    float eps2;
    float s2;    // its scale
    uint d2;     // slot of its output
    uint d2off;  // float offset of its output there
    uint pad0;
    uvec4 epi[6];
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer Wt { uint wt[]; };
layout(set = 0, binding = 3) buffer D { float dst[]; };
layout(set = 0, binding = 4) readonly buffer Bs { uint bs[]; };
layout(set = 0, binding = 5) buffer B5 { float b5[]; };
layout(set = 0, binding = 6) buffer B6 { float b6[]; };
layout(set = 0, binding = 7) buffer B7 { float b7[]; };

float ldv(uint s, uint i) {
    switch (s) {
    case 1u: return x[i];
    case 3u: return dst[i];
    case 5u: return b5[i];
    case 6u: return b6[i];
    default: return b7[i];
    }
}

void stv(uint s, uint i, float v) {
    switch (s) {
    case 3u: dst[i] = v; break;
    case 5u: b5[i] = v; break;
    case 6u: b6[i] = v; break;
    default: b7[i] = v; break;
    }
}

#include "epi.glsl"

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint base = row * p.n;
    uint L = gl_WorkGroupSize.x;
    // LayerNorm centres around the row's first value (see rmsnorm.comp).
    float shift = 0.0;
    float mean = 0.0;
    if (p.center != 0u) {
        shift = x[p.ob1 + base];
        float sum = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += L) {
            sum += x[p.ob1 + base + i] - shift;
        }
        mean = wg_sum(sum) / float(p.n);
    }
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += L) {
        float v = (x[p.ob1 + base + i] - shift) - mean;
        ss += v * v;
    }
    float inv = inversesqrt(wg_sum(ss) / float(p.n) + p.eps);
    float ss2 = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += L) {
        float v = ((x[p.ob1 + base + i] - shift) - mean) * inv;
        if (p.has_w != 0u) {
            v *= LOADF(wt, p.ob2 + i, p.wdt);
        }
        if (p.has_b != 0u) {
            v += LOADF(bs, p.ob4 + i, p.bdt);
        }
        v = epi_run(v, base + i);
        dst[p.ob3 + base + i] = v;
        ss2 += v * v;
    }
    if ((p.norm2 & 1u) != 0u) {
        // Each invocation reads back the values it stored itself.
        float inv2 = inversesqrt(wg_sum(ss2) / float(p.n) + p.eps2);
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += L) {
            float v = dst[p.ob3 + base + i] * inv2;
            if ((p.norm2 & 2u) != 0u) {
                v *= LOADF(bs, p.ob4 + i, p.w2dt);
            }
            stv(p.d2, p.d2off + base + i, v * p.s2);
        }
    }
}
