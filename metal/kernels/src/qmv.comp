#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Affine-quantized matrix-vector product for decode: dst[r, out0+o] =
// sum_k x[r, k] * (s[o, g] * q[o, k] + b[o, g]), g = k / group, computed as
// s * sum(q*x) + b * sum(x) per group. BITS (4 or 8) is fixed at compile
// time. Each workgroup owns ROWS output rows (few, so that even a
// 2048-row matrix spreads over >= 1024 workgroups and keeps enough loads in
// flight to approach memory bandwidth); its threads stride over the
// row in 16-byte chunks (coalesced), keep the chunk's x values in registers
// and reuse them for every row. One x row per workgroup in y.
// EXT builds qmvx4/qmvx8: the same product followed by an epilogue of
// elementwise ops on each output (src/epi.glsl).
// WIDE builds qmvw4/qmvw8 (and with EXT qmvxw4/qmvxw8) with 4 rows per
// workgroup, for large matrices: each workgroup reads x once for twice
// the weights, which on the H200 took an 8192x2048 4-bit product from
// 17.2 to 12.1 us and the 262144x2048 lm_head from 326 to 195 us, while
// matrices of a few million values or fewer ran faster with 2 rows (8
// rows was slower than 4 on every shape).
layout(local_size_x = 64) in;
#include "common.glsl"


layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n_in;   // inputs (columns of W)
    uint n_out;  // output rows handled by this dispatch
    uint ldd;    // row stride of dst, in floats
    uint out0;   // first output column of dst written by this dispatch
    uint gsize;  // quantization group size
    uint sdt;    // dtype of scales and biases
#ifdef EXT
    uint nepi;   // epilogue ops
    uint pad0;
    uvec4 epi[4];
#endif
} p;

layout(set = 0, binding = 1) readonly buffer X { vec4 x[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 w[]; };
layout(set = 0, binding = 3) readonly buffer S { uint sc[]; };
layout(set = 0, binding = 4) readonly buffer B { uint bi[]; };
#ifdef EXT
layout(set = 0, binding = 5) buffer D { float dst[]; };
layout(set = 0, binding = 6) buffer B6 { float b6[]; };
layout(set = 0, binding = 7) buffer B7 { float b7[]; };

float ldv(uint s, uint i) {
    switch (s) {
    case 1u: return x[i >> 2][i & 3u];
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

#ifdef WIDE
const uint ROWS = 4u;  // keep in step with kernels.QMVWideRows
#else
const uint ROWS = 2u;  // keep in step with kernels.QMVRows
#endif
const uint VPC = 128u / BITS;     // values per 16-byte chunk
const uvec4 MAGIC = uvec4(0x4b000000u);  // bits of 2^23
#if BITS == 4
const vec4 XSCALE = vec4(1.0, 1.0 / 16.0, 1.0 / 256.0, 1.0 / 4096.0);
#else
const vec4 XSCALE = vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
#endif

shared float part[gl_WorkGroupSize.x * ROWS];

void main() {
    uint r = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * ROWS;
    uint tid = gl_LocalInvocationID.x;
    uint cpr = p.n_in / VPC;
    uint gpr = p.n_in / p.gsize;

    float acc[ROWS];
    for (uint j = 0u; j < ROWS; j++) {
        acc[j] = 0.0;
    }

    for (uint c = tid; c < cpr; c += gl_WorkGroupSize.x) {
        uint xb = p.ob1 + (r * p.n_in + c * VPC) / 4u;
        // x is prescaled by 16^-k (4-bit) or 256^-k (8-bit) so that each
        // quantized value can stay at its bit position inside a 16-bit
        // half: OR-ing the half's masked bits into the mantissa of 2^23
        // and subtracting 2^23 yields q * 16^k exactly, with no shifts and
        // no integer-to-float conversions (a quarter-rate instruction).
        vec4 xv[VPC / 4u];
        float xs = 0.0;
        for (uint i = 0u; i < VPC / 4u; i++) {
            vec4 v = x[xb + i];
            xs += (v.x + v.y) + (v.z + v.w);
            xv[i] = v * XSCALE;
        }
        uint g = (c * VPC) / p.gsize;
        for (uint j = 0u; j < ROWS; j++) {
            uint row = min(row0 + j, p.n_out - 1u);
            uvec4 wq = w[p.ob2 + row * cpr + c];
            uint si = row * gpr + g;
            float s = LOADF(sc, p.ob3 + si, p.sdt);
            float b = LOADF(bi, p.ob4 + si, p.sdt);
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

    for (uint j = 0u; j < ROWS; j++) {
        float s = subgroupAdd(acc[j]);
        if (subgroupElect()) {
            part[gl_SubgroupID * ROWS + j] = s;
        }
    }
    barrier();
    if (tid < ROWS && row0 + tid < p.n_out) {
        float t = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; i++) {
            t += part[i * ROWS + tid];
        }
#ifdef EXT
        t = epi_run(t, row0 + tid);
#endif
        dst[p.ob5 + r * p.ldd + p.out0 + row0 + tid] = t;
    }
}
