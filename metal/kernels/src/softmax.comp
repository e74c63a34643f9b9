#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Softmax over the last axis, one workgroup per row (max, sum, write).
layout(local_size_x = 128) in;
#include "common.glsl"

#include "reduce.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;
    uint rows;
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) writeonly buffer D { float dst[]; };

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint base = row * p.n;
    float mx = uintBitsToFloat(0xff800000u);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        mx = max(mx, x[p.ob1 + base + i]);
    }
    mx = wg_max(mx);
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        s += exp(x[p.ob1 + base + i] - mx);
    }
    float inv = 1.0 / wg_sum(s);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        dst[p.ob2 + base + i] = exp(x[p.ob1 + base + i] - mx) * inv;
    }
}
