#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// RMSNorm over the last axis, one workgroup per row:
// dst = x / sqrt(mean(x^2) + eps) * weight (no weight when has_w == 0).
layout(local_size_x = 128) in;
#include "common.glsl"

#include "reduce.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;      // row length
    uint rows;
    uint has_w;
    uint wdt;
    float eps;
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer Wt { uint wt[]; };
layout(set = 0, binding = 3) buffer D { float dst[]; };

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint base = row * p.n;
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        float v = x[p.ob1 + base + i];
        ss += v * v;
    }
    float inv = inversesqrt(wg_sum(ss) / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        float v = x[p.ob1 + base + i] * inv;
        if (p.has_w != 0u) {
            v *= LOADF(wt, p.ob2 + i, p.wdt);
        }
        dst[p.ob3 + base + i] = v;
    }
}
