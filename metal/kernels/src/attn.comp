#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Attention for decode and prefill, one workgroup per (query row, head):
// softmax(scale * q.k + mask) . v with grouped-query sharing. The mask is
// never materialized: key column k sits at the absolute position given by
// the spans table (start, first column) and query row r at qpos0 + r; a key
// is visible iff kpos <= qpos and (window == 0 or qpos - kpos < window).
// Keys stream through in chunks of the workgroup size with an online
// softmax (running max and sum), so any number of keys fits. For decode the
// keys are split over gl_WorkGroupID.z: with kps > 0, workgroup z handles
// keys [z*kps, (z+1)*kps) and writes its partial (max, sum, unnormalized
// output) to binding 6 for attnmerge to combine.
layout(local_size_x = 128) in;
#include "common.glsl"

#include "reduce.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint nq;
    uint nk;
    uint hq;
    uint hkv;
    uint d;
    uint qpos0;
    uint window;
    uint nspans;
    float scale;
    uint kps;  // keys per split; 0 = no split
} p;

layout(set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(set = 0, binding = 2) readonly buffer K { float kk[]; };
layout(set = 0, binding = 3) readonly buffer V { float vv[]; };
layout(set = 0, binding = 4) readonly buffer Sp { uint spans[]; };  // pairs (start position, first column)
layout(set = 0, binding = 5) writeonly buffer D { float dst[]; };
layout(set = 0, binding = 6) writeonly buffer P { float part[]; };  // [nq, hq, splits, d + 2]

const uint MAXD = 512u;
const uint SLOTS = MAXD / 128u;

shared float qs[MAXD];
shared float pw[gl_WorkGroupSize.x];

void main() {
    uint h = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint C = gl_WorkGroupSize.x;
    uint kvh = h / (p.hq / p.hkv);
    uint qpos = p.qpos0 + r;
    uint qbase = p.ob1 + (r * p.hq + h) * p.d;
    for (uint i = t; i < p.d; i += C) {
        qs[i] = q[qbase + i] * p.scale;
    }
    barrier();

    float m = uintBitsToFloat(0xff800000u);  // -inf
    float l = 0.0;
    float acc[SLOTS];
    for (uint j = 0u; j < SLOTS; j++) {
        acc[j] = 0.0;
    }
    uint kstride = p.hkv * p.d;

    uint k0 = 0u;
    uint k1 = p.nk;
    if (p.kps != 0u) {
        k0 = gl_WorkGroupID.z * p.kps;
        k1 = min(p.nk, k0 + p.kps);
    }
    for (uint base = k0; base < k1; base += C) {
        uint key = base + t;
        float s = uintBitsToFloat(0xff800000u);
        if (key < k1) {
            uint kpos = 0u;
            for (uint i = 0u; i < p.nspans; i++) {
                uint first = spans[p.ob4 + 2u * i + 1u];
                if (key >= first) {
                    kpos = spans[p.ob4 + 2u * i] + (key - first);
                }
            }
            if (kpos <= qpos && (p.window == 0u || qpos - kpos < p.window)) {
                uint kb = p.ob2 + key * kstride + kvh * p.d;
                float dd = 0.0;
                for (uint i = 0u; i < p.d; i++) {
                    dd += qs[i] * kk[kb + i];
                }
                s = dd;
            }
        }
        float cm = wg_max(s);
        if (isinf(cm)) {
            continue;  // the whole chunk is masked (uniform across the workgroup)
        }
        float mnew = max(m, cm);
        float alpha = exp(m - mnew);  // 0 when m is -inf
        float pe = isinf(s) ? 0.0 : exp(s - mnew);
        pw[t] = pe;
        l = l * alpha + wg_sum(pe);  // wg_sum's barrier also publishes pw
        uint cnt = min(C, k1 - base);
        for (uint j = 0u; j < SLOTS; j++) {
            uint dim = t + j * C;
            if (dim < p.d) {
                float a = acc[j] * alpha;
                uint vb = p.ob3 + base * kstride + kvh * p.d + dim;
                for (uint i = 0u; i < cnt; i++) {
                    a += pw[i] * vv[vb + i * kstride];
                }
                acc[j] = a;
            }
        }
        m = mnew;
        barrier();
    }

    if (p.kps != 0u) {
        uint pb = p.ob6 + ((r * p.hq + h) * gl_NumWorkGroups.z + gl_WorkGroupID.z) * (p.d + 2u);
        if (t == 0u) {
            part[pb] = m;
            part[pb + 1u] = l;
        }
        for (uint j = 0u; j < SLOTS; j++) {
            uint dim = t + j * C;
            if (dim < p.d) {
                part[pb + 2u + dim] = acc[j];
            }
        }
        return;
    }
    uint ob = p.ob5 + (r * p.hq + h) * p.d;
    for (uint j = 0u; j < SLOTS; j++) {
        uint dim = t + j * C;
        if (dim < p.d) {
            dst[ob + dim] = acc[j] / l;
        }
    }
}
