#version 450
#extension GL_GOOGLE_include_directive : require
// Attention for decode-sized queries, one workgroup per (KV head, query
// row, key split): the G = hq/hkv query heads that share a KV head are
// scored together, so each key and value row is read once for all of them,
// and the keys are cut into many short splits so that enough workgroups
// run at once (a decode step has only a few heads). Same parameters,
// bindings and mask rules as attn.comp: key column k sits at the position
// the spans table gives, a key is visible iff kpos <= qpos and (window == 0
// or qpos - kpos < window). Workgroup z handles keys [z*kps, (z+1)*kps) in
// chunks of KC keys with an online softmax and writes its partial (max,
// sum, unnormalized output) per query head for attnmerge; kps = 0 means one
// split over every key, normalized into dst directly.
//
// A chunk: the 128 invocations form PARTS groups of KC, invocation
// (part, j) takes key j of the chunk and dimensions [part*d/PARTS, ...) and
// computes its partial dot products with the G queries; the partials meet
// in shared memory; then every invocation owns output dimensions
// t, t+128, ... of all G heads and accumulates the chunk's values into them.
layout(local_size_x = 128) in;
#include "common.glsl"

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
    uint kps;  // keys per split, a multiple of KC; 0 = no split
} p;

layout(set = 0, binding = 1) readonly buffer Q { float q[]; };
layout(set = 0, binding = 2) readonly buffer K { float kk[]; };
layout(set = 0, binding = 3) readonly buffer V { float vv[]; };
layout(set = 0, binding = 4) readonly buffer Sp { uint spans[]; };  // pairs (start position, first column)
layout(set = 0, binding = 5) writeonly buffer D { float dst[]; };
layout(set = 0, binding = 6) writeonly buffer P { float part[]; };  // [nq, hq, splits, d + 2]

const uint KC = 32u;              // keys per chunk
const uint PARTS = 4u;            // invocations sharing one key's dot products (128 / KC)
const uint MAXG = 8u;             // query heads per KV head
const uint MAXQ = 2048u;          // G * d
const uint DS = 4u;               // output dimensions per invocation: d <= 512
const uint DB = 16u;              // key values loaded together per invocation
const uint VB = 8u;               // value rows loaded together
#define NEG_INF uintBitsToFloat(0xff800000u)

shared float qs[MAXQ];
shared float red[PARTS * MAXG * KC];
shared float pw[MAXG * KC];

void main() {
    uint kvh = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint G = p.hq / p.hkv;
    uint qpos = p.qpos0 + r;
    uint h0 = kvh * G;
    uint qbase = p.ob1 + (r * p.hq + h0) * p.d;
    for (uint i = t; i < G * p.d; i += 128u) {
        qs[i] = q[qbase + i] * p.scale;
    }
    barrier();

    float m[MAXG];
    float l[MAXG];
    float acc[MAXG * DS];
    for (uint g = 0u; g < MAXG; g++) {
        m[g] = NEG_INF;
        l[g] = 0.0;
        for (uint s = 0u; s < DS; s++) {
            acc[g * DS + s] = 0.0;
        }
    }
    uint kstride = p.hkv * p.d;
    uint k0 = 0u;
    uint k1 = p.nk;
    if (p.kps != 0u) {
        k0 = gl_WorkGroupID.z * p.kps;
        k1 = min(p.nk, k0 + p.kps);
    }
    uint j = t % KC;
    uint prt = t / KC;
    uint dlen = (p.d + PARTS - 1u) / PARTS;
    uint d0 = min(p.d, prt * dlen);
    uint d1 = min(p.d, d0 + dlen);

    for (uint base = k0; base < k1; base += KC) {
        uint key = base + j;
        bool vis = false;
        if (key < k1) {
            uint kpos = 0u;
            for (uint i = 0u; i < p.nspans; i++) {
                uint first = spans[p.ob4 + 2u * i + 1u];
                if (key >= first) {
                    kpos = spans[p.ob4 + 2u * i] + (key - first);
                }
            }
            vis = kpos <= qpos && (p.window == 0u || qpos - kpos < p.window);
        }
        float dots[MAXG];
        for (uint g = 0u; g < MAXG; g++) {
            dots[g] = 0.0;
        }
        if (vis) {
            // DB loads in flight at once: with few workgroups a decode
            // step cannot hide one memory round trip per value.
            uint kb = p.ob2 + key * kstride + kvh * p.d;
            for (uint i0 = d0; i0 < d1; i0 += DB) {
                float kv[DB];
                // Unconditional loads (clamped index, then a select on the
                // value): a load under a condition becomes a branch of its
                // own, and the loads then wait for each other.
                for (uint u = 0u; u < DB; u++) {
                    kv[u] = kk[kb + min(i0 + u, d1 - 1u)];
                }
                for (uint u = 0u; u < DB; u++) {
                    kv[u] = i0 + u < d1 ? kv[u] : 0.0;
                }
                for (uint u = 0u; u < DB; u++) {
                    uint i = min(i0 + u, d1 - 1u);
                    for (uint g = 0u; g < MAXG; g++) {
                        if (g < G) {
                            dots[g] += qs[g * p.d + i] * kv[u];
                        }
                    }
                }
            }
        } else if (prt == 0u) {
            for (uint g = 0u; g < MAXG; g++) {
                dots[g] = NEG_INF;  // the sum over parts stays -inf
            }
        }
        for (uint g = 0u; g < MAXG; g++) {
            if (g < G) {
                red[(prt * MAXG + g) * KC + j] = dots[g];
            }
        }
        barrier();
        for (uint e = t; e < G * KC; e += 128u) {
            uint g = e / KC;
            uint jj = e % KC;
            float s = 0.0;
            for (uint pp = 0u; pp < PARTS; pp++) {
                s += red[(pp * MAXG + g) * KC + jj];
            }
            pw[e] = s;
        }
        barrier();
        // Every invocation finds each head's new running max (the same
        // value everywhere), then the scores become probabilities.
        float mnew[MAXG];
        float alpha[MAXG];
        for (uint g = 0u; g < MAXG; g++) {
            float cm = NEG_INF;
            if (g < G) {
                for (uint jj = 0u; jj < KC; jj++) {
                    cm = max(cm, pw[g * KC + jj]);
                }
            }
            mnew[g] = max(m[g], cm);
            alpha[g] = isinf(mnew[g]) ? 1.0 : exp(m[g] - mnew[g]);  // exp(-inf) = 0 when m was -inf
        }
        barrier();
        for (uint e = t; e < G * KC; e += 128u) {
            float s = pw[e];
            float mg = mnew[0];
            for (uint g = 1u; g < MAXG; g++) {
                if (g == e / KC) {
                    mg = mnew[g];
                }
            }
            pw[e] = isinf(s) ? 0.0 : exp(s - mg);
        }
        barrier();
        uint cnt = min(KC, k1 - base);
        for (uint g = 0u; g < MAXG; g++) {
            if (g < G) {
                float ls = 0.0;
                for (uint jj = 0u; jj < cnt; jj++) {
                    ls += pw[g * KC + jj];
                }
                l[g] = l[g] * alpha[g] + ls;
                for (uint s = 0u; s < DS; s++) {
                    acc[g * DS + s] *= alpha[g];
                }
                m[g] = mnew[g];
            }
        }
        uint vb = p.ob3 + base * kstride + kvh * p.d;
        for (uint j0 = 0u; j0 < cnt; j0 += VB) {
            float v[VB * DS];
            for (uint u = 0u; u < VB; u++) {
                for (uint s = 0u; s < DS; s++) {
                    uint dim = t + s * 128u;
                    float vl = vv[vb + min(j0 + u, cnt - 1u) * kstride + min(dim, p.d - 1u)];
                    v[u * DS + s] = (j0 + u < cnt && dim < p.d) ? vl : 0.0;
                }
            }
            for (uint u = 0u; u < VB; u++) {
                uint jj = min(j0 + u, KC - 1u);  // pw is 0 past cnt only within the chunk; v is 0 there
                for (uint s = 0u; s < DS; s++) {
                    for (uint g = 0u; g < MAXG; g++) {
                        if (g < G) {
                            acc[g * DS + s] += pw[g * KC + jj] * v[u * DS + s];
                        }
                    }
                }
            }
        }
        barrier();
    }

    for (uint g = 0u; g < MAXG; g++) {
        if (g >= G) {
            break;
        }
        uint row = r * p.hq + h0 + g;
        if (p.kps != 0u) {
            uint pb = p.ob6 + (row * gl_NumWorkGroups.z + gl_WorkGroupID.z) * (p.d + 2u);
            if (t == 0u) {
                part[pb] = m[g];
                part[pb + 1u] = l[g];
            }
            for (uint s = 0u; s < DS; s++) {
                uint dim = t + s * 128u;
                if (dim < p.d) {
                    part[pb + 2u + dim] = acc[g * DS + s];
                }
            }
        } else {
            for (uint s = 0u; s < DS; s++) {
                uint dim = t + s * 128u;
                if (dim < p.d) {
                    dst[p.ob5 + row * p.d + dim] = acc[g * DS + s] / l[g];
                }
            }
        }
    }
}
