#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Gemma 3n row statistics ops, one workgroup per row (dst may alias x):
// op 0, Gaussian top-k sparsity: dst = max(0, x - (mean + f * std)) with the
//       population standard deviation (two passes for accuracy);
// op 1, RMS matching: dst = x * sqrt(mean(ref^2)) / sqrt(max(mean(x^2), f)).
layout(local_size_x = 128) in;
#include "common.glsl"
#include "reduce.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;
    uint rows;
    uint op;
    float f;
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer R { float ref[]; };
layout(set = 0, binding = 3) buffer D { float dst[]; };

void main() {
    uint row = linear_group();
    if (row >= p.rows) {
        return;
    }
    uint base = row * p.n;
    uint t = gl_LocalInvocationID.x;
    uint L = gl_WorkGroupSize.x;
    float scale;
    float cut;
    if (p.op == 0u) {
        float s = 0.0;
        for (uint i = t; i < p.n; i += L) {
            s += x[p.ob1 + base + i];
        }
        float mean = wg_sum(s) / float(p.n);
        float v = 0.0;
        for (uint i = t; i < p.n; i += L) {
            float d = x[p.ob1 + base + i] - mean;
            v += d * d;
        }
        cut = mean + sqrt(wg_sum(v) / float(p.n)) * p.f;
        scale = 1.0;
    } else {
        float sx = 0.0;
        float sr = 0.0;
        for (uint i = t; i < p.n; i += L) {
            float a = x[p.ob1 + base + i];
            float b = ref[p.ob2 + base + i];
            sx += a * a;
            sr += b * b;
        }
        float msx = wg_sum(sx) / float(p.n);
        float msr = wg_sum(sr) / float(p.n);
        scale = sqrt(msr) / sqrt(max(msx, p.f));
        cut = 0.0;
    }
    for (uint i = t; i < p.n; i += L) {
        float a = x[p.ob1 + base + i];
        dst[p.ob3 + base + i] = p.op == 0u ? max(0.0, a - cut) : a * scale;
    }
}
