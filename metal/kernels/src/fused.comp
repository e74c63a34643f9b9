#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// A fused decode launch: up to MAXSEG quantized matrix-vector products
// (segments, BITS 4 or 8, one x row each; BITS 0 builds the variant with
// none), then a tail of up to MAXOPS small ops that the workgroup finishing
// last runs alone, in order, once every segment is complete (an arrival
// counter in the activation buffer; the last workgroup resets it). The
// tail ops are the backend's elementwise, normalization, row-statistic,
// stream, RoPE and small matrix-vector ops, encoded as 4 uvec4 each, with
// every operand a (slot, offset) pair: slot 1 is the activation buffer,
// 3 the weight buffer (2 is the same buffer read as uvec4 by the
// segments), 4..7 any other buffers (constants, staging, K/V cache).
// Offsets count 32-bit words, or elements of a 16-bit dtype for weights.
//
// Each workgroup of the segment phase owns 32 output rows, 8 per group of
// 64 invocations; within a group the invocations stride over the row in
// 16-byte chunks and keep their chunk of x in registers for all 8 rows,
// as qmv does.
layout(local_size_x = 256) in;
#include "common.glsl"

#include "reduce.glsl"

const uint MAXSEG = 4u;
const uint MAXOPS = 16u;

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint nseg;    // segments
    uint ntail;   // tail ops
    uint counter; // word index in act of this launch's arrival counter
    uint nwg;     // workgroups of the launch
    uint gsize;   // quantization group of the segments
    uint sdt;     // dtype of their scales and biases
    uint pad0, pad1;
    // segment i: seg[2i] = (n_in, x word offset, w uvec4 offset, scale
    // offset), seg[2i+1] = (bias offset, rows, dst word offset, first wg)
    uvec4 seg[2u * MAXSEG];
    uvec4 prog[4u * MAXOPS];
} p;

layout(set = 0, binding = 1) coherent buffer B1 { uint act[]; };
layout(set = 0, binding = 2) readonly buffer B2 { uvec4 w[]; };
layout(set = 0, binding = 3) readonly buffer B3 { uint wu[]; };
layout(set = 0, binding = 4) coherent buffer B4 { uint b4[]; };
layout(set = 0, binding = 5) coherent buffer B5 { uint b5[]; };
layout(set = 0, binding = 6) coherent buffer B6 { uint b6[]; };
layout(set = 0, binding = 7) coherent buffer B7 { uint b7[]; };

uint ld(uint s, uint i) {
    switch (s) {
    case 1u: return act[i];
    case 3u: return wu[i];
    case 4u: return b4[i];
    case 5u: return b5[i];
    case 6u: return b6[i];
    default: return b7[i];
    }
}

float ldf(uint s, uint i) {
    return uintBitsToFloat(ld(s, i));
}

// Element i of a float tensor of dtype dt (16-bit types count 16-bit
// elements).
float ldt(uint s, uint i, uint dt) {
    if (dt == DT_F32) {
        return uintBitsToFloat(ld(s, i));
    }
    return cvt16((ld(s, i >> 1) >> ((i & 1u) << 4)) & 0xffffu, dt);
}

void stf(uint s, uint i, float v) {
    uint u = floatBitsToUint(v);
    switch (s) {
    case 1u: act[i] = u; break;
    case 4u: b4[i] = u; break;
    case 5u: b5[i] = u; break;
    case 6u: b6[i] = u; break;
    default: b7[i] = u; break;
    }
}

shared uint s_last;
shared float s_part[gl_WorkGroupSize.x / 8u * 8u];

#if BITS > 0
const uint ROWS = 8u;
const uint VPC = 128u / BITS;
const uvec4 MAGIC = uvec4(0x4b000000u);
#if BITS == 4
const vec4 XSCALE = vec4(1.0, 1.0 / 16.0, 1.0 / 256.0, 1.0 / 4096.0);
#else
const vec4 XSCALE = vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
#endif

void segments() {
    uint wg = linear_group();
    uint si = 0u;
    for (uint i = 1u; i < p.nseg; i++) {
        if (wg >= p.seg[2u * i + 1u].w) {
            si = i;
        }
    }
    uvec4 sa = p.seg[2u * si];
    uvec4 sb = p.seg[2u * si + 1u];
    uint n_in = sa.x;
    uint rows = sb.y;
    uint tid = gl_LocalInvocationID.x;
    uint grp = tid / 64u;
    uint lt = tid % 64u;
    uint row0 = (wg - sb.w) * 32u + grp * ROWS;
    uint cpr = n_in / VPC;
    uint gpr = n_in / p.gsize;
    float acc[ROWS];
    for (uint j = 0u; j < ROWS; j++) {
        acc[j] = 0.0;
    }
    if (row0 < rows) {
        for (uint c = lt; c < cpr; c += 64u) {
            uint xb = sa.y + c * VPC;
            vec4 xv[VPC / 4u];
            float xs = 0.0;
            for (uint i = 0u; i < VPC / 4u; i++) {
                vec4 v = vec4(uintBitsToFloat(act[xb + 4u * i]), uintBitsToFloat(act[xb + 4u * i + 1u]),
                              uintBitsToFloat(act[xb + 4u * i + 2u]), uintBitsToFloat(act[xb + 4u * i + 3u]));
                xs += (v.x + v.y) + (v.z + v.w);
                xv[i] = v * XSCALE;
            }
            uint g = (c * VPC) / p.gsize;
            for (uint j = 0u; j < ROWS; j++) {
                uint row = min(row0 + j, rows - 1u);
                uvec4 wq = w[sa.z + row * cpr + c];
                uint gi = row * gpr + g;
                float s = ldt(3u, sa.w + gi, p.sdt);
                float b = ldt(3u, sb.x + gi, p.sdt);
                float d = 0.0;
                for (uint k = 0u; k < 4u; k++) {
                    uint word = wq[k];
#if BITS == 4
                    uvec4 lo = uvec4(word) & uvec4(0xfu, 0xf0u, 0xf00u, 0xf000u);
                    uvec4 hi = uvec4(word >> 16) & uvec4(0xfu, 0xf0u, 0xf00u, 0xf000u);
                    vec4 ql = uintBitsToFloat(lo | MAGIC) - 8388608.0;
                    vec4 qh = uintBitsToFloat(hi | MAGIC) - 8388608.0;
                    d += dot(ql, xv[2u * k]) + dot(qh, xv[2u * k + 1u]);
#else
                    uvec4 q = uvec4(word, word, word >> 16, word >> 16) & uvec4(0xffu, 0xff00u, 0xffu, 0xff00u);
                    d += dot(uintBitsToFloat(q | MAGIC) - 8388608.0, xv[k]);
#endif
                }
                acc[j] += s * d + b * xs;
            }
        }
    }
    // Reduce within each group of 64 invocations: subgroups never straddle
    // groups while the subgroup size divides 64.
    for (uint j = 0u; j < ROWS; j++) {
        float s = subgroupAdd(acc[j]);
        if (subgroupElect()) {
            s_part[gl_SubgroupID * ROWS + j] = s;
        }
    }
    barrier();
    uint per = max(64u / gl_SubgroupSize, 1u);
    if (lt < ROWS && row0 + lt < rows) {
        float t = 0.0;
        for (uint i = 0u; i < per; i++) {
            t += s_part[(grp * per + i) * ROWS + lt];
        }
        act[sb.z + row0 + lt] = floatBitsToUint(t);
    }
}
#endif

// --- tail ops ---------------------------------------------------------
//
// One workgroup runs the tail alone, so each op is latency-bound: every
// op loads all the values an invocation needs into registers before it
// computes and stores any (K per invocation and block), so an op costs
// one round trip to memory rather than one per value (the buffers are
// coherent, so loads cannot be moved above earlier stores).

const uint T = gl_WorkGroupSize.x;
const uint K = 8u;   // values per invocation and block (elementwise ops)
const uint KN = 16u; // values per invocation held across a norm's passes

float elt(uint op, float x, float y, float f) {
    switch (op) {
    case 0u:
        return x + y;
    case 1u:
        return x * y;
    case 2u:
        return x * f;
    case 3u:
        return safe_tanh(x / f) * f;
    case 4u:
        return 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case 6u:
        return x / (1.0 + exp(-x));
    }
    return x;
}

void op_elt(uvec4 r0, uvec4 r1, uvec4 r2) {
    uint total = r0.y, nb = r0.z, op = r0.w;
    float f = uintBitsToFloat(r2.z);
    bool binary = op <= 1u;
    for (uint base = 0u; base < total; base += T * K) {
        float xa[K];
        float xb[K];
        for (uint k = 0u; k < K; k++) {
            uint i = base + k * T + gl_LocalInvocationID.x;
            xa[k] = 0.0;
            xb[k] = 0.0;
            if (i < total) {
                xa[k] = ldf(r1.x, r1.y + i);
                if (binary) {
                    xb[k] = ldf(r1.z, r1.w + i % nb);
                }
            }
        }
        for (uint k = 0u; k < K; k++) {
            uint i = base + k * T + gl_LocalInvocationID.x;
            if (i < total) {
                stf(r2.x, r2.y + i, elt(op, xa[k], xb[k], f));
            }
        }
    }
}

shared float s_row[64];
shared float s_row2[64];

// Per-row sums of v (or of its squares) over this invocation's values,
// element e = k*T + tid of the flattened [rows, n], into s_row; rows <= 64.
void row_sums(float v[KN], bool squares, uint n, uint rows, uint total) {
    for (uint row = 0u; row < rows; row++) {
        float s = 0.0;
        for (uint k = 0u; k < KN; k++) {
            uint e = k * T + gl_LocalInvocationID.x;
            if (e < total && e / n == row) {
                s += squares ? v[k] * v[k] : v[k];
            }
        }
        s = wg_sum(s);
        if (gl_LocalInvocationID.x == 0u) {
            s_row[row] = s;
        }
    }
    barrier();
}

void op_norm(uvec4 r0, uvec4 r1, uvec4 r2, uvec4 r3) {
    uint n = r0.y, rows = r0.z, flags = r0.w;
    bool hasW = (flags & 1u) != 0u, center = (flags & 2u) != 0u, hasB = (flags & 4u) != 0u;
    float eps = uintBitsToFloat(r3.z);
    uint t = gl_LocalInvocationID.x;
    uint total = n * rows;
    if (total <= T * KN && rows <= 64u) {
        // Registers hold the whole [rows, n] block with its weights and
        // biases: one round of loads, sums per row, one store.
        float v[KN];
        for (uint k = 0u; k < KN; k++) {
            uint e = k * T + t;
            v[k] = e < total ? ldf(r1.x, r1.y + e) : 0.0;
        }
        // The weight and bias loads go out with x's, before the sums.
        float wv[KN];
        float bv[KN];
        for (uint k = 0u; k < KN; k++) {
            uint e = k * T + t;
            wv[k] = 1.0;
            bv[k] = 0.0;
            if (e < total) {
                if (hasW) {
                    wv[k] = ldt(r1.z, r1.w + e % n, r3.x);
                }
                if (hasB) {
                    bv[k] = ldt(r2.z, r2.w + e % n, r3.y);
                }
            }
        }
        if (center) {
            // Shift by each row's first value so the sums hold small
            // deviations (as the rmsnorm kernel does).
            if (t < rows) {
                s_row2[t] = ldf(r1.x, r1.y + t * n);
            }
            barrier();
            for (uint k = 0u; k < KN; k++) {
                uint e = k * T + t;
                if (e < total) {
                    v[k] -= s_row2[e / n];
                }
            }
            row_sums(v, false, n, rows, total);
            for (uint k = 0u; k < KN; k++) {
                uint e = k * T + t;
                if (e < total) {
                    v[k] -= s_row[e / n] / float(n);
                }
            }
            barrier();
        }
        row_sums(v, true, n, rows, total);
        for (uint k = 0u; k < KN; k++) {
            uint e = k * T + t;
            if (e < total) {
                float inv = inversesqrt(s_row[e / n] / float(n) + eps);
                float y = v[k] * inv;
                if (hasW) {
                    y *= wv[k];
                }
                if (hasB) {
                    y += bv[k];
                }
                stf(r2.x, r2.y + e, y);
            }
        }
        barrier();
        return;
    }
    for (uint row = 0u; row < rows; row++) {
        uint xb = r1.y + row * n;
        uint db = r2.y + row * n;
        float shift = 0.0;
        float mean = 0.0;
        if (center) {
            shift = ldf(r1.x, xb);
            float sum = 0.0;
            for (uint i = t; i < n; i += T) {
                sum += ldf(r1.x, xb + i) - shift;
            }
            mean = wg_sum(sum) / float(n);
        }
        float ss = 0.0;
        for (uint i = t; i < n; i += T) {
            float v = (ldf(r1.x, xb + i) - shift) - mean;
            ss += v * v;
        }
        float inv = inversesqrt(wg_sum(ss) / float(n) + eps);
        for (uint i = t; i < n; i += T) {
            float v = ((ldf(r1.x, xb + i) - shift) - mean) * inv;
            if (hasW) {
                v *= ldt(r1.z, r1.w + i, r3.x);
            }
            if (hasB) {
                v += ldt(r2.z, r2.w + i, r3.y);
            }
            stf(r2.x, db + i, v);
        }
        barrier();
    }
}

void op_rowstat(uvec4 r0, uvec4 r1, uvec4 r2) {
    uint n = r0.y, rows = r0.z, op = r0.w;
    float f = uintBitsToFloat(r2.z);
    uint t = gl_LocalInvocationID.x;
    for (uint row = 0u; row < rows; row++) {
        uint xb = r1.y + row * n;
        uint rb = r1.w + row * n;
        float v[KN];
        float rv[KN];
        bool held = n <= T * KN;
        if (held) {
            for (uint k = 0u; k < KN; k++) {
                uint i = k * T + t;
                v[k] = i < n ? ldf(r1.x, xb + i) : 0.0;
                rv[k] = i < n && op != 0u ? ldf(r1.z, rb + i) : 0.0;
            }
        }
        float scale;
        float cut;
        if (op == 0u) {
            float s = 0.0;
            if (held) {
                for (uint k = 0u; k < KN; k++) {
                    s += v[k];
                }
            } else {
                for (uint i = t; i < n; i += T) {
                    s += ldf(r1.x, xb + i);
                }
            }
            float mean = wg_sum(s) / float(n);
            float q = 0.0;
            if (held) {
                for (uint k = 0u; k < KN; k++) {
                    float d = v[k] - mean;
                    q += k * T + t < n ? d * d : 0.0;
                }
            } else {
                for (uint i = t; i < n; i += T) {
                    float d = ldf(r1.x, xb + i) - mean;
                    q += d * d;
                }
            }
            cut = mean + sqrt(wg_sum(q) / float(n)) * f;
            scale = 1.0;
        } else {
            float sx = 0.0;
            float sr = 0.0;
            if (held) {
                for (uint k = 0u; k < KN; k++) {
                    sx += v[k] * v[k];
                    sr += rv[k] * rv[k];
                }
            } else {
                for (uint i = t; i < n; i += T) {
                    float a = ldf(r1.x, xb + i);
                    float b = ldf(r1.z, rb + i);
                    sx += a * a;
                    sr += b * b;
                }
            }
            float msx = wg_sum(sx) / float(n);
            float msr = wg_sum(sr) / float(n);
            scale = sqrt(msr) / sqrt(max(msx, f));
            cut = 0.0;
        }
        if (held) {
            for (uint k = 0u; k < KN; k++) {
                uint i = k * T + t;
                if (i < n) {
                    stf(r2.x, r2.y + row * n + i, op == 0u ? max(0.0, v[k] - cut) : v[k] * scale);
                }
            }
        } else {
            for (uint i = t; i < n; i += T) {
                float a = ldf(r1.x, xb + i);
                stf(r2.x, r2.y + row * n + i, op == 0u ? max(0.0, a - cut) : a * scale);
            }
        }
        barrier();
    }
}

void op_streams(uvec4 r0, uvec4 r1, uvec4 r2, uvec4 r3) {
    uint op = r0.y, S = r0.z, n = r0.w;
    uint N = r1.x, R = r1.y, total = r1.z;
    for (uint base = 0u; base < total; base += T * K) {
        float out_[K];
        for (uint k = 0u; k < K; k++) {
            uint id = base + k * T + gl_LocalInvocationID.x;
            out_[k] = 0.0;
            if (id >= total) {
                continue;
            }
            uint i = id % N;
            uint rest = id / N;
            if (op == 0u) {
                uint t = rest % n;
                uint r = rest / n;
                float s = 0.0;
                for (uint j = 0u; j < S; j++) {
                    s += ldf(r2.z, r2.w + t * R * S + r * S + j) * ldf(r2.x, r2.y + (j * n + t) * N + i);
                }
                out_[k] = s;
            } else if (op == 1u) {
                uint t = rest % n;
                uint s = rest / n;
                out_[k] = ldf(r2.x, r2.y + id) + ldf(r2.z, r2.w + t * S + s) * ldf(r3.x, r3.y + t * N + i);
            } else {
                uint aa = rest % S;
                uint bb = rest / S;
                out_[k] = ldf(r2.x, r2.y + (aa * n + bb) * N + i);
            }
        }
        for (uint k = 0u; k < K; k++) {
            uint id = base + k * T + gl_LocalInvocationID.x;
            if (id < total) {
                stf(r3.z, r3.w + id, out_[k]);
            }
        }
    }
}

void op_rope(uvec4 r0, uvec4 r1, uvec4 r2) {
    uint rows = r0.y, heads = r0.z, hd = r0.w;
    uint half_dims = r1.x, pos0 = r1.y, inter = r1.z;
    uint total = rows * heads * half_dims;
    for (uint base = 0u; base < total; base += T * K) {
        float x1[K];
        float x2[K];
        float th[K];
        for (uint k = 0u; k < K; k++) {
            uint id = base + k * T + gl_LocalInvocationID.x;
            x1[k] = 0.0;
            x2[k] = 0.0;
            th[k] = 0.0;
            if (id < total) {
                uint i = id % half_dims;
                uint rh = id / half_dims;
                uint b1 = r2.y + rh * hd + (inter != 0u ? 2u * i : i);
                uint b2 = b1 + (inter != 0u ? 1u : half_dims);
                x1[k] = ldf(r2.x, b1);
                x2[k] = ldf(r2.x, b2);
                th[k] = float(pos0 + rh / heads) * ldf(r2.z, r2.w + i);
            }
        }
        for (uint k = 0u; k < K; k++) {
            uint id = base + k * T + gl_LocalInvocationID.x;
            if (id < total) {
                uint i = id % half_dims;
                uint rh = id / half_dims;
                uint b1 = r2.y + rh * hd + (inter != 0u ? 2u * i : i);
                uint b2 = b1 + (inter != 0u ? 1u : half_dims);
                float theta = th[k];
                float kk = floor(theta * 0.15915494309189535 + 0.5);
                float r = fma(-kk, 6.25, theta);
                r = fma(-kk, 0.033203125, r);
                r = fma(-kk, -1.781781975296326e-05, r);
                float c = cos(r);
                float s = sin(r);
                stf(r2.x, b1, x1[k] * c - x2[k] * s);
                stf(r2.x, b2, x2[k] * c + x1[k] * s);
            }
        }
    }
}

// Small matrix-vector product: dst[r, o] = sum_k x[r, k] W[o, k] for up to
// 4 rows and any outputs, 8 outputs reduced at a time. bits 0: dense W of
// dtype dt; 4 or 8: quantized words with scales and biases of dtype dt.
void op_mv(uvec4 r0, uvec4 r1, uvec4 r2, uvec4 r3) {
    uint n_in = r0.y, n_out = r0.z, bits = r0.w & 0xffu, rows = r0.w >> 8;
    uint gsize = r3.z & 0xffffu, dt = r3.z >> 16, ldd = r3.w;
    uint t = gl_LocalInvocationID.x;
    uint per = bits == 0u ? 1u : 32u / bits;
    for (uint row = 0u; row < rows; row++) {
        for (uint o0 = 0u; o0 < n_out; o0 += 8u) {
            float acc[8];
            for (uint j = 0u; j < 8u; j++) {
                acc[j] = 0.0;
            }
            for (uint k = t; k < n_in; k += T) {
                float x = ldf(r1.x, r1.y + row * n_in + k);
                for (uint j = 0u; j < 8u; j++) {
                    uint o = min(o0 + j, n_out - 1u);
                    float wv;
                    if (bits == 0u) {
                        wv = ldt(r1.z, r1.w + o * n_in + k, dt);
                    } else {
                        uint word = ld(r1.z, r1.w + o * (n_in / per) + k / per);
                        float q = float((word >> ((k % per) * bits)) & ((1u << bits) - 1u));
                        uint gi = o * (n_in / gsize) + k / gsize;
                        wv = ldt(r2.x, r2.y + gi, dt) * q + ldt(r2.z, r2.w + gi, dt);
                    }
                    acc[j] += x * wv;
                }
            }
            for (uint j = 0u; j < 8u; j++) {
                float s = subgroupAdd(acc[j]);
                if (subgroupElect()) {
                    s_part[gl_SubgroupID * 8u + j] = s;
                }
            }
            barrier();
            if (t < 8u && o0 + t < n_out) {
                float s = 0.0;
                for (uint i = 0u; i < gl_NumSubgroups; i++) {
                    s += s_part[i * 8u + t];
                }
                stf(r3.x, r3.y + row * ldd + o0 + t, s);
            }
            barrier();
        }
    }
}

void run_tail() {
    for (uint k = 0u; k < p.ntail; k++) {
        uvec4 r0 = p.prog[4u * k];
        uvec4 r1 = p.prog[4u * k + 1u];
        uvec4 r2 = p.prog[4u * k + 2u];
        uvec4 r3 = p.prog[4u * k + 3u];
        uint code = r0.x & 0xffu;
        switch (code) {
        case 1u:
            op_elt(r0, r1, r2);
            break;
        case 2u:
            op_norm(r0, r1, r2, r3);
            break;
        case 3u:
            op_rowstat(r0, r1, r2);
            break;
        case 4u:
            op_streams(r0, r1, r2, r3);
            break;
        case 5u:
            op_rope(r0, r1, r2);
            break;
        default:
            op_mv(r0, r1, r2, r3);
            break;
        }
        // Bit 8: the next op reads only what this invocation wrote, at
        // the same indices, so no barrier is needed before it.
        if ((r0.x & 0x100u) == 0u) {
            memoryBarrierBuffer();
            barrier();
        }
    }
}

void main() {
#if BITS > 0
    segments();
#endif
    if (p.ntail == 0u) {
        return;
    }
    memoryBarrierBuffer();
    barrier();
    if (p.nwg > 1u) {
        if (gl_LocalInvocationID.x == 0u) {
            s_last = atomicAdd(act[p.counter], 1u) == p.nwg - 1u ? 1u : 0u;
        }
        barrier();
        if (s_last == 0u) {
            return;
        }
        memoryBarrierBuffer();
    }
    run_tail();
    if (p.nwg > 1u && gl_LocalInvocationID.x == 0u) {
        act[p.counter] = 0u;
    }
}
