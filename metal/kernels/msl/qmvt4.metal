#pragma clang diagnostic ignored "-Wmissing-prototypes"
#pragma clang diagnostic ignored "-Wmissing-braces"
#pragma clang diagnostic ignored "-Wunused-variable"

#include <metal_stdlib>
#include <simd/simd.h>
#include <metal_atomic>

using namespace metal;

template<typename T, size_t Num>
struct spvUnsafeArray
{
    T elements[Num ? Num : 1];
    
    thread T& operator [] (size_t pos) thread
    {
        return elements[pos];
    }
    constexpr const thread T& operator [] (size_t pos) const thread
    {
        return elements[pos];
    }
    
    device T& operator [] (size_t pos) device
    {
        return elements[pos];
    }
    constexpr const device T& operator [] (size_t pos) const device
    {
        return elements[pos];
    }
    
    constexpr const constant T& operator [] (size_t pos) const constant
    {
        return elements[pos];
    }
    
    threadgroup T& operator [] (size_t pos) threadgroup
    {
        return elements[pos];
    }
    constexpr const threadgroup T& operator [] (size_t pos) const threadgroup
    {
        return elements[pos];
    }
};

struct B1
{
    uint act[1];
};

struct B3
{
    uint wu[1];
};

struct B4
{
    uint b4[1];
};

struct B5
{
    uint b5[1];
};

struct B6
{
    uint b6[1];
};

struct B7
{
    uint b7[1];
};

struct Params
{
    uint ob0;
    uint ob1;
    uint ob2;
    uint ob3;
    uint ob4;
    uint ob5;
    uint ob6;
    uint ob7;
    uint nseg;
    uint ntail;
    uint counter;
    uint nwg;
    uint gsize;
    uint sdt;
    uint pad0;
    uint pad1;
    uint4 seg[8];
    uint4 prog[64];
};

struct B2
{
    uint4 w[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
uint ld(thread const uint& s, thread const uint& i, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242)
{
    switch (s)
    {
        case 1u:
        {
            return v_200.act[i];
        }
        case 3u:
        {
            return v_210.wu[i];
        }
        case 4u:
        {
            return v_218.b4[i];
        }
        case 5u:
        {
            return v_226.b5[i];
        }
        case 6u:
        {
            return v_234.b6[i];
        }
        default:
        {
            return v_242.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _91;
    if (dt == 2u)
    {
        _91 = as_type<float>(bits << uint(16));
    }
    else
    {
        _91 = float2(as_type<half2>(bits)).x;
    }
    return _91;
}

static inline __attribute__((always_inline))
float ldt(thread const uint& s, thread const uint& i, thread const uint& dt, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242)
{
    if (dt == 0u)
    {
        uint param = s;
        uint param_1 = i;
        return as_type<float>(ld(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242));
    }
    uint param_2 = s;
    uint param_3 = i >> uint(1);
    uint param_4 = (ld(param_2, param_3, v_200, v_210, v_218, v_226, v_234, v_242) >> ((i & 1u) << uint(4))) & 65535u;
    uint param_5 = dt;
    return cvt16(param_4, param_5);
}

static inline __attribute__((always_inline))
void segments(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups, thread uint& gl_SubgroupID, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, constant Params& p, thread uint3& gl_LocalInvocationID, const device B2& v_531, threadgroup float (&s_part)[256], thread uint& gl_SubgroupSize)
{
    uint wg = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    uint si = 0u;
    for (uint i = 1u; i < p.nseg; i++)
    {
        if (wg >= p.seg[(2u * i) + 1u].w)
        {
            si = i;
        }
    }
    uint4 sa = p.seg[2u * si];
    uint4 sb = p.seg[(2u * si) + 1u];
    uint n_in = sa.x;
    uint rows = sb.y;
    uint tid = gl_LocalInvocationID.x;
    uint grp = tid / 64u;
    uint lt = tid % 64u;
    uint row0 = ((wg - sb.w) * 32u) + (grp * 8u);
    uint cpr = n_in / 32u;
    uint gpr = n_in / p.gsize;
    spvUnsafeArray<float, 8> acc;
    for (uint j = 0u; j < 8u; j++)
    {
        acc[j] = 0.0;
    }
    if (row0 < rows)
    {
        spvUnsafeArray<float4, 8> xv;
        for (uint c = lt; c < cpr; c += 64u)
        {
            uint xb = sa.y + (c * 32u);
            float xs = 0.0;
            for (uint i_1 = 0u; i_1 < 8u; i_1++)
            {
                float4 v = float4(as_type<float>(v_200.act[xb + (4u * i_1)]), as_type<float>(v_200.act[(xb + (4u * i_1)) + 1u]), as_type<float>(v_200.act[(xb + (4u * i_1)) + 2u]), as_type<float>(v_200.act[(xb + (4u * i_1)) + 3u]));
                xs += ((v.x + v.y) + (v.z + v.w));
                xv[i_1] = v * float4(1.0, 0.0625, 0.00390625, 0.000244140625);
            }
            uint g = (c * 32u) / p.gsize;
            for (uint j_1 = 0u; j_1 < 8u; j_1++)
            {
                uint row = min((row0 + j_1), (rows - 1u));
                uint4 wq = v_531.w[(sa.z + (row * cpr)) + c];
                uint gi = (row * gpr) + g;
                uint param = 3u;
                uint param_1 = sa.w + gi;
                uint param_2 = p.sdt;
                float s = ldt(param, param_1, param_2, v_200, v_210, v_218, v_226, v_234, v_242);
                uint param_3 = 3u;
                uint param_4 = sb.x + gi;
                uint param_5 = p.sdt;
                float b = ldt(param_3, param_4, param_5, v_200, v_210, v_218, v_226, v_234, v_242);
                float d = 0.0;
                for (uint k = 0u; k < 4u; k++)
                {
                    uint word = wq[k];
                    uint4 lo = uint4(word) & uint4(15u, 240u, 3840u, 61440u);
                    uint4 hi = uint4(word >> uint(16)) & uint4(15u, 240u, 3840u, 61440u);
                    float4 ql = as_type<float4>(lo | uint4(1258291200u)) - float4(8388608.0);
                    float4 qh = as_type<float4>(hi | uint4(1258291200u)) - float4(8388608.0);
                    d += (dot(ql, xv[2u * k]) + dot(qh, xv[(2u * k) + 1u]));
                }
                acc[j_1] += ((s * d) + (b * xs));
            }
        }
    }
    for (uint j_2 = 0u; j_2 < 8u; j_2++)
    {
        float s_1 = simd_sum(acc[j_2]);
        bool _661 = simd_is_first();
        if (_661)
        {
            s_part[(gl_SubgroupID * 8u) + j_2] = s_1;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint per = max((64u / gl_SubgroupSize), 1u);
    bool _679 = lt < 8u;
    bool _687;
    if (_679)
    {
        _687 = (row0 + lt) < rows;
    }
    else
    {
        _687 = _679;
    }
    if (_687)
    {
        float t = 0.0;
        for (uint i_2 = 0u; i_2 < per; i_2++)
        {
            t += s_part[(((grp * per) + i_2) * 8u) + lt];
        }
        v_200.act[(sb.z + row0) + lt] = as_type<uint>(t);
    }
}

static inline __attribute__((always_inline))
float ldf(thread const uint& s, thread const uint& i, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242)
{
    uint param = s;
    uint param_1 = i;
    return as_type<float>(ld(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242));
}

static inline __attribute__((always_inline))
void stf(thread const uint& s, thread const uint& i, thread const float& v, volatile device B1& v_200, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242)
{
    uint u = as_type<uint>(v);
    switch (s)
    {
        case 1u:
        {
            v_200.act[i] = u;
            break;
        }
        case 4u:
        {
            v_218.b4[i] = u;
            break;
        }
        case 5u:
        {
            v_226.b5[i] = u;
            break;
        }
        case 6u:
        {
            v_234.b6[i] = u;
            break;
        }
        default:
        {
            v_242.b7[i] = u;
            break;
        }
    }
}

static inline __attribute__((always_inline))
void op_mv(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID, threadgroup float (&s_part)[256])
{
    uint n_in = r0.y;
    uint n_out = r0.z;
    uint bits = r0.w & 255u;
    uint rows = r0.w >> uint(8);
    uint gsize = r3.z & 65535u;
    uint dt = r3.z >> uint(16);
    uint ldd = r3.w;
    uint t = gl_LocalInvocationID.x;
    uint _1672;
    if (bits == 0u)
    {
        _1672 = 1u;
    }
    else
    {
        _1672 = 32u / bits;
    }
    uint per = _1672;
    spvUnsafeArray<float, 8> acc;
    float wv;
    for (uint row = 0u; row < rows; row++)
    {
        for (uint o0 = 0u; o0 < n_out; o0 += 8u)
        {
            for (uint j = 0u; j < 8u; j++)
            {
                acc[j] = 0.0;
            }
            for (uint k = t; k < n_in; k += 256u)
            {
                uint param = r1.x;
                uint param_1 = (r1.y + (row * n_in)) + k;
                float x = ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242);
                for (uint j_1 = 0u; j_1 < 8u; j_1++)
                {
                    uint o = min((o0 + j_1), (n_out - 1u));
                    if (bits == 0u)
                    {
                        uint param_2 = r1.z;
                        uint param_3 = (r1.w + (o * n_in)) + k;
                        uint param_4 = dt;
                        wv = ldt(param_2, param_3, param_4, v_200, v_210, v_218, v_226, v_234, v_242);
                    }
                    else
                    {
                        uint param_5 = r1.z;
                        uint param_6 = (r1.w + (o * (n_in / per))) + (k / per);
                        uint word = ld(param_5, param_6, v_200, v_210, v_218, v_226, v_234, v_242);
                        float q = float((word >> ((k % per) * bits)) & ((1u << bits) - 1u));
                        uint gi = (o * (n_in / gsize)) + (k / gsize);
                        uint param_7 = r2.x;
                        uint param_8 = r2.y + gi;
                        uint param_9 = dt;
                        uint param_10 = r2.z;
                        uint param_11 = r2.w + gi;
                        uint param_12 = dt;
                        wv = (ldt(param_7, param_8, param_9, v_200, v_210, v_218, v_226, v_234, v_242) * q) + ldt(param_10, param_11, param_12, v_200, v_210, v_218, v_226, v_234, v_242);
                    }
                    acc[j_1] += (x * wv);
                }
            }
            for (uint j_2 = 0u; j_2 < 8u; j_2++)
            {
                float s = simd_sum(acc[j_2]);
                bool _1861 = simd_is_first();
                if (_1861)
                {
                    s_part[(gl_SubgroupID * 8u) + j_2] = s;
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            bool _1873 = t < 8u;
            bool _1881;
            if (_1873)
            {
                _1881 = (o0 + t) < n_out;
            }
            else
            {
                _1881 = _1873;
            }
            if (_1881)
            {
                float s_1 = 0.0;
                for (uint i = 0u; i < gl_NumSubgroups; i++)
                {
                    s_1 += s_part[(i * 8u) + t];
                }
                uint param_13 = r3.x;
                uint param_14 = ((r3.y + (row * ldd)) + o0) + t;
                float param_15 = s_1;
                stf(param_13, param_14, param_15, v_200, v_218, v_226, v_234, v_242);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _124;
    if (x < 0.0)
    {
        _124 = -r;
    }
    else
    {
        _124 = r;
    }
    return _124;
}

static inline __attribute__((always_inline))
void op_elt(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID)
{
    uint total = r0.y;
    uint nb = r0.z;
    uint op = r0.w;
    float f = as_type<float>(r2.z);
    float y;
    for (uint i = gl_LocalInvocationID.x; i < total; i += 256u)
    {
        uint param = r1.x;
        uint param_1 = r1.y + i;
        float x = ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242);
        switch (op)
        {
            case 0u:
            {
                uint param_2 = r1.z;
                uint param_3 = r1.w + (i % nb);
                y = x + ldf(param_2, param_3, v_200, v_210, v_218, v_226, v_234, v_242);
                break;
            }
            case 1u:
            {
                uint param_4 = r1.z;
                uint param_5 = r1.w + (i % nb);
                y = x * ldf(param_4, param_5, v_200, v_210, v_218, v_226, v_234, v_242);
                break;
            }
            case 2u:
            {
                y = x * f;
                break;
            }
            case 3u:
            {
                float param_6 = x / f;
                y = safe_tanh(param_6) * f;
                break;
            }
            case 4u:
            {
                float param_7 = 0.79788458347320556640625 * (x + (((0.0447149984538555145263671875 * x) * x) * x));
                y = (0.5 * x) * (1.0 + safe_tanh(param_7));
                break;
            }
            case 6u:
            {
                y = x / (1.0 + exp(-x));
                break;
            }
            default:
            {
                y = x;
                break;
            }
        }
        uint param_8 = r2.x;
        uint param_9 = r2.y + i;
        float param_10 = y;
        stf(param_8, param_9, param_10, v_200, v_218, v_226, v_234, v_242);
    }
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _154 = simd_is_first();
    if (_154)
    {
        red_scratch[gl_SubgroupID] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++)
    {
        t += red_scratch[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return t;
}

static inline __attribute__((always_inline))
void op_norm(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID)
{
    uint n = r0.y;
    uint rows = r0.z;
    uint flags = r0.w;
    bool hasW = (flags & 1u) != 0u;
    bool center = (flags & 2u) != 0u;
    bool hasB = (flags & 4u) != 0u;
    float eps = as_type<float>(r3.z);
    uint t = gl_LocalInvocationID.x;
    for (uint row = 0u; row < rows; row++)
    {
        uint xb = r1.y + (row * n);
        uint db = r2.y + (row * n);
        float shift = 0.0;
        float mean = 0.0;
        if (center)
        {
            uint param = r1.x;
            uint param_1 = xb;
            shift = ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242);
            float sum = 0.0;
            for (uint i = t; i < n; i += 256u)
            {
                uint param_2 = r1.x;
                uint param_3 = xb + i;
                sum += (ldf(param_2, param_3, v_200, v_210, v_218, v_226, v_234, v_242) - shift);
            }
            float param_4 = sum;
            float _939 = wg_sum(param_4, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            mean = _939 / float(n);
        }
        float ss = 0.0;
        for (uint i_1 = t; i_1 < n; i_1 += 256u)
        {
            uint param_5 = r1.x;
            uint param_6 = xb + i_1;
            float v = (ldf(param_5, param_6, v_200, v_210, v_218, v_226, v_234, v_242) - shift) - mean;
            ss += (v * v);
        }
        float param_7 = ss;
        float _977 = wg_sum(param_7, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float inv = rsqrt((_977 / float(n)) + eps);
        for (uint i_2 = t; i_2 < n; i_2 += 256u)
        {
            uint param_8 = r1.x;
            uint param_9 = xb + i_2;
            float v_1 = ((ldf(param_8, param_9, v_200, v_210, v_218, v_226, v_234, v_242) - shift) - mean) * inv;
            if (hasW)
            {
                uint param_10 = r1.z;
                uint param_11 = r1.w + i_2;
                uint param_12 = r3.x;
                v_1 *= ldt(param_10, param_11, param_12, v_200, v_210, v_218, v_226, v_234, v_242);
            }
            if (hasB)
            {
                uint param_13 = r2.z;
                uint param_14 = r2.w + i_2;
                uint param_15 = r3.y;
                v_1 += ldt(param_13, param_14, param_15, v_200, v_210, v_218, v_226, v_234, v_242);
            }
            uint param_16 = r2.x;
            uint param_17 = db + i_2;
            float param_18 = v_1;
            stf(param_16, param_17, param_18, v_200, v_218, v_226, v_234, v_242);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

static inline __attribute__((always_inline))
void op_rowstat(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID)
{
    uint n = r0.y;
    uint rows = r0.z;
    uint op = r0.w;
    float f = as_type<float>(r2.z);
    uint t = gl_LocalInvocationID.x;
    float cut;
    float scale;
    float _1265;
    for (uint row = 0u; row < rows; row++)
    {
        uint xb = r1.y + (row * n);
        uint rb = r1.w + (row * n);
        if (op == 0u)
        {
            float s = 0.0;
            for (uint i = t; i < n; i += 256u)
            {
                uint param = r1.x;
                uint param_1 = xb + i;
                s += ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242);
            }
            float param_2 = s;
            float _1126 = wg_sum(param_2, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float mean = _1126 / float(n);
            float v = 0.0;
            for (uint i_1 = t; i_1 < n; i_1 += 256u)
            {
                uint param_3 = r1.x;
                uint param_4 = xb + i_1;
                float d = ldf(param_3, param_4, v_200, v_210, v_218, v_226, v_234, v_242) - mean;
                v += (d * d);
            }
            float param_5 = v;
            float _1163 = wg_sum(param_5, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            cut = mean + (sqrt(_1163 / float(n)) * f);
            scale = 1.0;
        }
        else
        {
            float sx = 0.0;
            float sr = 0.0;
            for (uint i_2 = t; i_2 < n; i_2 += 256u)
            {
                uint param_6 = r1.x;
                uint param_7 = xb + i_2;
                float a = ldf(param_6, param_7, v_200, v_210, v_218, v_226, v_234, v_242);
                uint param_8 = r1.z;
                uint param_9 = rb + i_2;
                float b = ldf(param_8, param_9, v_200, v_210, v_218, v_226, v_234, v_242);
                sx += (a * a);
                sr += (b * b);
            }
            float param_10 = sx;
            float _1218 = wg_sum(param_10, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float msx = _1218 / float(n);
            float param_11 = sr;
            float _1225 = wg_sum(param_11, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float msr = _1225 / float(n);
            scale = sqrt(msr) / sqrt(fast::max(msx, f));
            cut = 0.0;
        }
        for (uint i_3 = t; i_3 < n; i_3 += 256u)
        {
            uint param_12 = r1.x;
            uint param_13 = xb + i_3;
            float a_1 = ldf(param_12, param_13, v_200, v_210, v_218, v_226, v_234, v_242);
            if (op == 0u)
            {
                _1265 = fast::max(0.0, a_1 - cut);
            }
            else
            {
                _1265 = a_1 * scale;
            }
            uint param_14 = r2.x;
            uint param_15 = (r2.y + (row * n)) + i_3;
            float param_16 = _1265;
            stf(param_14, param_15, param_16, v_200, v_218, v_226, v_234, v_242);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

static inline __attribute__((always_inline))
void op_streams(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID)
{
    uint op = r0.y;
    uint S = r0.z;
    uint n = r0.w;
    uint N = r1.x;
    uint R = r1.y;
    uint total = r1.z;
    float v;
    for (uint id = gl_LocalInvocationID.x; id < total; id += 256u)
    {
        uint i = id % N;
        uint rest = id / N;
        if (op == 0u)
        {
            uint t = rest % n;
            uint r = rest / n;
            float s = 0.0;
            for (uint k = 0u; k < S; k++)
            {
                uint param = r2.z;
                uint param_1 = ((r2.w + ((t * R) * S)) + (r * S)) + k;
                uint param_2 = r2.x;
                uint param_3 = (r2.y + (((k * n) + t) * N)) + i;
                s += (ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242) * ldf(param_2, param_3, v_200, v_210, v_218, v_226, v_234, v_242));
            }
            v = s;
        }
        else
        {
            if (op == 1u)
            {
                uint t_1 = rest % n;
                uint s_1 = rest / n;
                uint param_4 = r2.x;
                uint param_5 = r2.y + id;
                uint param_6 = r2.z;
                uint param_7 = (r2.w + (t_1 * S)) + s_1;
                uint param_8 = r3.x;
                uint param_9 = (r3.y + (t_1 * N)) + i;
                v = ldf(param_4, param_5, v_200, v_210, v_218, v_226, v_234, v_242) + (ldf(param_6, param_7, v_200, v_210, v_218, v_226, v_234, v_242) * ldf(param_8, param_9, v_200, v_210, v_218, v_226, v_234, v_242));
            }
            else
            {
                uint aa = rest % S;
                uint bb = rest / S;
                uint param_10 = r2.x;
                uint param_11 = (r2.y + (((aa * n) + bb) * N)) + i;
                v = ldf(param_10, param_11, v_200, v_210, v_218, v_226, v_234, v_242);
            }
        }
        uint param_12 = r3.z;
        uint param_13 = r3.w + id;
        float param_14 = v;
        stf(param_12, param_13, param_14, v_200, v_218, v_226, v_234, v_242);
    }
}

static inline __attribute__((always_inline))
void op_rope(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, thread uint3& gl_LocalInvocationID)
{
    uint rows = r0.y;
    uint heads = r0.z;
    uint hd = r0.w;
    uint half_dims = r1.x;
    uint pos0 = r1.y;
    uint inter = r1.z;
    uint total = (rows * heads) * half_dims;
    for (uint id = gl_LocalInvocationID.x; id < total; id += 256u)
    {
        uint i = id % half_dims;
        uint rh = id / half_dims;
        uint row = rh / heads;
        uint param = r2.z;
        uint param_1 = r2.w + i;
        float theta = float(pos0 + row) * ldf(param, param_1, v_200, v_210, v_218, v_226, v_234, v_242);
        float k = floor((theta * 0.15915493667125701904296875) + 0.5);
        float r = fma(-k, 6.25, theta);
        r = fma(-k, 0.033203125, r);
        r = fma(-k, -1.7817819752963259816169738769531e-05, r);
        float c = cos(r);
        float s = sin(r);
        uint b1 = (r2.y + (rh * hd)) + i;
        uint b2 = b1 + half_dims;
        if (inter != 0u)
        {
            b1 = (r2.y + (rh * hd)) + (2u * i);
            b2 = b1 + 1u;
        }
        uint param_2 = r2.x;
        uint param_3 = b1;
        float x1 = ldf(param_2, param_3, v_200, v_210, v_218, v_226, v_234, v_242);
        uint param_4 = r2.x;
        uint param_5 = b2;
        float x2 = ldf(param_4, param_5, v_200, v_210, v_218, v_226, v_234, v_242);
        uint param_6 = r2.x;
        uint param_7 = b1;
        float param_8 = (x1 * c) - (x2 * s);
        stf(param_6, param_7, param_8, v_200, v_218, v_226, v_234, v_242);
        uint param_9 = r2.x;
        uint param_10 = b2;
        float param_11 = (x2 * c) + (x1 * s);
        stf(param_9, param_10, param_11, v_200, v_218, v_226, v_234, v_242);
    }
}

static inline __attribute__((always_inline))
void run_tail(threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_200, const device B3& v_210, volatile device B4& v_218, volatile device B5& v_226, volatile device B6& v_234, volatile device B7& v_242, constant Params& p, thread uint3& gl_LocalInvocationID, threadgroup float (&s_part)[256])
{
    for (uint k = 0u; k < p.ntail; k++)
    {
        uint4 r0 = p.prog[4u * k];
        uint4 r1 = p.prog[(4u * k) + 1u];
        uint4 r2 = p.prog[(4u * k) + 2u];
        uint4 r3 = p.prog[(4u * k) + 3u];
        uint code = r0.x & 255u;
        switch (code)
        {
            case 1u:
            {
                uint4 param = r0;
                uint4 param_1 = r1;
                uint4 param_2 = r2;
                op_elt(param, param_1, param_2, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID);
                break;
            }
            case 2u:
            {
                uint4 param_3 = r0;
                uint4 param_4 = r1;
                uint4 param_5 = r2;
                uint4 param_6 = r3;
                op_norm(param_3, param_4, param_5, param_6, red_scratch, gl_SubgroupID, gl_NumSubgroups, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID);
                break;
            }
            case 3u:
            {
                uint4 param_7 = r0;
                uint4 param_8 = r1;
                uint4 param_9 = r2;
                op_rowstat(param_7, param_8, param_9, red_scratch, gl_SubgroupID, gl_NumSubgroups, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID);
                break;
            }
            case 4u:
            {
                uint4 param_10 = r0;
                uint4 param_11 = r1;
                uint4 param_12 = r2;
                uint4 param_13 = r3;
                op_streams(param_10, param_11, param_12, param_13, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID);
                break;
            }
            case 5u:
            {
                uint4 param_14 = r0;
                uint4 param_15 = r1;
                uint4 param_16 = r2;
                op_rope(param_14, param_15, param_16, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID);
                break;
            }
            default:
            {
                uint4 param_17 = r0;
                uint4 param_18 = r1;
                uint4 param_19 = r2;
                uint4 param_20 = r3;
                op_mv(param_17, param_18, param_19, param_20, gl_SubgroupID, gl_NumSubgroups, v_200, v_210, v_218, v_226, v_234, v_242, gl_LocalInvocationID, s_part);
                break;
            }
        }
        if ((r0.x & 256u) == 0u)
        {
            threadgroup_barrier(mem_flags::mem_device);
        }
    }
}

kernel void qmvt4(constant Params& p [[buffer(0)]], volatile device B1& v_200 [[buffer(1)]], const device B2& v_531 [[buffer(2)]], const device B3& v_210 [[buffer(3)]], volatile device B4& v_218 [[buffer(4)]], volatile device B5& v_226 [[buffer(5)]], volatile device B6& v_234 [[buffer(6)]], volatile device B7& v_242 [[buffer(7)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint gl_SubgroupSize [[thread_execution_width]])
{
    threadgroup float red_scratch[256];
    threadgroup float s_part[256];
    threadgroup uint s_last;
    segments(gl_WorkGroupID, gl_NumWorkGroups, gl_SubgroupID, v_200, v_210, v_218, v_226, v_234, v_242, p, gl_LocalInvocationID, v_531, s_part, gl_SubgroupSize);
    if (p.ntail == 0u)
    {
        return;
    }
    threadgroup_barrier(mem_flags::mem_device);
    if (p.nwg > 1u)
    {
        if (gl_LocalInvocationID.x == 0u)
        {
            uint _2060 = atomic_fetch_add_explicit((volatile device atomic_uint*)&v_200.act[p.counter], 1u, memory_order_relaxed);
            s_last = uint(_2060 == (p.nwg - 1u));
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (s_last == 0u)
        {
            return;
        }
        threadgroup_barrier(mem_flags::mem_device);
    }
    run_tail(red_scratch, gl_SubgroupID, gl_NumSubgroups, v_200, v_210, v_218, v_226, v_234, v_242, p, gl_LocalInvocationID, s_part);
    bool _2074 = p.nwg > 1u;
    bool _2080;
    if (_2074)
    {
        _2080 = gl_LocalInvocationID.x == 0u;
    }
    else
    {
        _2080 = _2074;
    }
    if (_2080)
    {
        v_200.act[p.counter] = 0u;
    }
}

