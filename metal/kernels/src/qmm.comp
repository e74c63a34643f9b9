#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Tiled matrix product for prefill: dst[m, out0+n] = sum_k x[m, k] * W[n, k].
// MODE 4 or 8: W is affine-quantized with that many bits (scales and biases
// per group of gsize inputs); MODE 0: W is dense of dtype wdt. Each
// workgroup computes a 64x64 tile of dst, 4x4 values per thread, staging
// 32-wide slices of x and of the dequantized W in shared memory as vec4s
// (a thread reads one vec4 of each per step for 16 products). Quantized W
// is staged a 32-bit word per thread: its 8 (or 4) codes share one group,
// so one scale and one bias dequantize them all.
// A dense W times at most FEW rows of x (decode: Gemma 3n's AltUp
// coefficients, 4 inputs; the tiled loop would stage 64-row tiles of
// zeros) is instead a dot per output: each subgroup takes outputs of the
// workgroup's 64 in turn, its lanes striding over k, and one subgroup sum.
// EXT (with MODE 0) builds mmx: the dense product of one row followed by
// an epilogue of elementwise ops on each output (src/epi.glsl).
layout(local_size_x = 256) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n_in;   // inputs K
    uint n_out;  // outputs handled by this dispatch
    uint n_rows; // rows M of x
    uint ldd;    // row stride of dst in floats
    uint out0;   // first output column of dst
    uint gsize;  // group size (quantized)
    uint sdt;    // dtype of scales/biases (quantized)
    uint wdt;    // dtype of W (dense)
#ifdef EXT
    uint nepi;   // epilogue ops
    uint pad0, pad1, pad2;
    uvec4 epi[4];
#endif
} p;

layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(set = 0, binding = 3) readonly buffer S { uint sc[]; };
layout(set = 0, binding = 4) readonly buffer B { uint bi[]; };
#ifdef EXT
layout(set = 0, binding = 5) buffer D { float dst[]; };
layout(set = 0, binding = 6) buffer B6 { float b6[]; };
layout(set = 0, binding = 7) buffer B7 { float b7[]; };

float ldv(uint s, uint i) {
    switch (s) {
    case 1u: return x[i];
    case 5u: return dst[i];
    case 6u: return b6[i];
    default: return b7[i];
    }
}

void stv(uint s, uint i, float v) {
    switch (s) {
    case 5u: dst[i] = v; break;
    case 6u: b6[i] = v; break;
    default: b7[i] = v; break;
    }
}

#include "epi.glsl"
#else
layout(set = 0, binding = 5) writeonly buffer D { float dst[]; };
#endif

const uint BM = 64u;
const uint BN = 64u;
const uint BK = 32u;
// A row of the staging tiles is 16 vec4s plus one of padding: the writes
// of one step (consecutive threads, consecutive k) then spread over 8
// banks instead of one.
const uint ROW4 = BM / 4u + 1u;

shared vec4 xs[BK][ROW4];
shared vec4 ws[BK][ROW4];

void put_x(uint kk, uint rr, float v) { xs[kk][rr >> 2u][rr & 3u] = v; }
void put_w(uint kk, uint rr, float v) { ws[kk][rr >> 2u][rr & 3u] = v; }

// stage_w writes the dequantized slice k0..k0+BK of W's rows n0..n0+BN
// into ws (zero outside W).
void stage_w(uint tid, uint n0, uint k0) {
#if MODE == 0
    for (uint e = tid; e < BN * BK; e += gl_WorkGroupSize.x) {
        uint rr = e / BK;
        uint kk = e % BK;
        uint n = n0 + rr;
        uint k = k0 + kk;
        put_w(kk, rr, (n < p.n_out && k < p.n_in) ? LOADF(w, p.ob2 + n * p.n_in + k, p.wdt) : 0.0);
    }
#else
    const uint per = 32u / MODE;       // codes in a word
    const uint wpr = BK / per;         // words of a row in the slice
    const uint mask = (1u << MODE) - 1u;
    uint words = p.n_in / per;
    uint groups = p.n_in / p.gsize;
    for (uint e = tid; e < BN * wpr; e += gl_WorkGroupSize.x) {
        uint rr = e / wpr;
        uint wq = e % wpr;
        uint n = n0 + rr;
        uint k = k0 + wq * per;
        uint kk = wq * per;
        if (n < p.n_out && k < p.n_in) {
            uint word = w[p.ob2 + n * words + k / per];
            uint si = n * groups + k / p.gsize;
            float s = LOADF(sc, p.ob3 + si, p.sdt);
            float b = LOADF(bi, p.ob4 + si, p.sdt);
            for (uint i = 0u; i < per; i++) {
                put_w(kk + i, rr, s * float((word >> (i * MODE)) & mask) + b);
            }
        } else {
            for (uint i = 0u; i < per; i++) {
                put_w(kk + i, rr, 0.0);
            }
        }
    }
#endif
}

#if MODE == 0
const uint FEW = 4u;

// few_rows computes dst for the rows m0..m0+rows-1 (rows <= FEW) and the
// workgroup's outputs n0..n0+BN-1 as dots, one subgroup per output.
void few_rows(uint n0, uint m0, uint rows) {
    uint n1 = min(n0 + BN, p.n_out);
    for (uint n = n0 + gl_SubgroupID; n < n1; n += gl_NumSubgroups) {
        for (uint i = 0u; i < rows; i++) {
            uint m = m0 + i;
            float d = 0.0;
            for (uint k = gl_SubgroupInvocationID; k < p.n_in; k += gl_SubgroupSize) {
                d += x[p.ob1 + m * p.n_in + k] * LOADF(w, p.ob2 + n * p.n_in + k, p.wdt);
            }
            float v = subgroupAdd(d);
            if (subgroupElect()) {
#ifdef EXT
                v = epi_run(v, n);
#endif
                dst[p.ob5 + m * p.ldd + p.out0 + n] = v;
            }
        }
    }
}
#endif

void main() {
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % 16u;
    uint ty = tid / 16u;
    uint n0 = gl_WorkGroupID.x * BN;
    uint m0 = gl_WorkGroupID.y * BM;
#if MODE == 0
    // Uniform across the workgroup, so the tiled path's barriers below
    // stay in uniform control flow.
    if (p.n_rows - m0 <= FEW) {
        few_rows(n0, m0, p.n_rows - m0);
        return;
    }
#endif

    // acc[i] holds row m0 + 4ty + i, columns n0 + 4tx .. +3.
    vec4 acc[4];
    for (uint i = 0u; i < 4u; i++) {
        acc[i] = vec4(0.0);
    }

    for (uint k0 = 0u; k0 < p.n_in; k0 += BK) {
        for (uint e = tid; e < BM * BK; e += gl_WorkGroupSize.x) {
            uint rr = e / BK;
            uint kk = e % BK;
            uint m = m0 + rr;
            uint k = k0 + kk;
            put_x(kk, rr, (m < p.n_rows && k < p.n_in) ? x[p.ob1 + m * p.n_in + k] : 0.0);
        }
        stage_w(tid, n0, k0);
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            vec4 a = xs[kk][ty];
            vec4 b = ws[kk][tx];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
        barrier();
    }

    for (uint i = 0u; i < 4u; i++) {
        uint m = m0 + ty * 4u + i;
        if (m >= p.n_rows) {
            continue;
        }
        for (uint j = 0u; j < 4u; j++) {
            uint n = n0 + tx * 4u + j;
            if (n < p.n_out) {
                float v = acc[i][j];
#ifdef EXT
                // One row (the backend folds ops into one-row products
                // only): the value's index is its output column.
                v = epi_run(v, n);
#endif
                dst[p.ob5 + m * p.ldd + p.out0 + n] = v;
            }
        }
    }
}
