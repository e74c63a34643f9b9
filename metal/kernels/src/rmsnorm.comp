#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Row normalization over the last axis, one workgroup per row, 512
// invocations wide: a decode step normalizes single rows of a few thousand
// values, and a narrower workgroup left each invocation a chain of
// dependent memory round trips.
// RMSNorm (center == 0): dst = x / sqrt(mean(x^2) + eps) * weight.
// LayerNorm (center == 1): dst = (x - mean) / sqrt(var + eps) * weight
// + bias, with the population variance taken around the mean (two
// passes, so a row far from zero keeps its small spread).
// No weight when has_w == 0, no bias when has_b == 0.
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
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer Wt { uint wt[]; };
layout(set = 0, binding = 3) buffer D { float dst[]; };
layout(set = 0, binding = 4) readonly buffer Bs { uint bs[]; };

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint base = row * p.n;
    // LayerNorm centres around the row's first value before summing, so
    // the float32 sums hold small deviations even for a row far from zero;
    // shift + mean is then the row mean.
    float shift = 0.0;
    float mean = 0.0;
    if (p.center != 0u) {
        shift = x[p.ob1 + base];
        float sum = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
            sum += x[p.ob1 + base + i] - shift;
        }
        mean = wg_sum(sum) / float(p.n);
    }
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        float v = (x[p.ob1 + base + i] - shift) - mean;
        ss += v * v;
    }
    float inv = inversesqrt(wg_sum(ss) / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        float v = ((x[p.ob1 + base + i] - shift) - mean) * inv;
        if (p.has_w != 0u) {
            v *= LOADF(wt, p.ob2 + i, p.wdt);
        }
        if (p.has_b != 0u) {
            v += LOADF(bs, p.ob4 + i, p.bdt);
        }
        dst[p.ob3 + base + i] = v;
    }
}
