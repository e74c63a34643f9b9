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

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

struct B2
{
    uint4 w[1];
};

static inline __attribute__((always_inline))
uint ld(thread const uint& s, thread const uint& i, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241)
{
    switch (s)
    {
        case 1u:
        {
            return v_199.act[i];
        }
        case 3u:
        {
            return v_209.wu[i];
        }
        case 4u:
        {
            return v_217.b4[i];
        }
        case 5u:
        {
            return v_225.b5[i];
        }
        case 6u:
        {
            return v_233.b6[i];
        }
        default:
        {
            return v_241.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float ldf(thread const uint& s, thread const uint& i, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241)
{
    uint param = s;
    uint param_1 = i;
    return as_type<float>(ld(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241));
}

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _105;
    if (dt == 2u)
    {
        _105 = as_type<float>(bits << uint(16));
    }
    else
    {
        _105 = float2(as_type<half2>(bits)).x;
    }
    return _105;
}

static inline __attribute__((always_inline))
float ldt(thread const uint& s, thread const uint& i, thread const uint& dt, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241)
{
    if (dt == 0u)
    {
        uint param = s;
        uint param_1 = i;
        return as_type<float>(ld(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241));
    }
    uint param_2 = s;
    uint param_3 = i >> uint(1);
    uint param_4 = (ld(param_2, param_3, v_199, v_209, v_217, v_225, v_233, v_241) >> ((i & 1u) << uint(4))) & 65535u;
    uint param_5 = dt;
    return cvt16(param_4, param_5);
}

static inline __attribute__((always_inline))
void stf(thread const uint& s, thread const uint& i, thread const float& v, volatile device B1& v_199, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241)
{
    uint u = as_type<uint>(v);
    switch (s)
    {
        case 1u:
        {
            v_199.act[i] = u;
            break;
        }
        case 4u:
        {
            v_217.b4[i] = u;
            break;
        }
        case 5u:
        {
            v_225.b5[i] = u;
            break;
        }
        case 6u:
        {
            v_233.b6[i] = u;
            break;
        }
        default:
        {
            v_241.b7[i] = u;
            break;
        }
    }
}

static inline __attribute__((always_inline))
void op_mv(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID, threadgroup float (&s_part)[256])
{
    uint n_in = r0.y;
    uint n_out = r0.z;
    uint bits = r0.w & 255u;
    uint rows = r0.w >> uint(8);
    uint gsize = r3.z & 65535u;
    uint dt = r3.z >> uint(16);
    uint ldd = r3.w;
    uint t = gl_LocalInvocationID.x;
    uint _2050;
    if (bits == 0u)
    {
        _2050 = 1u;
    }
    else
    {
        _2050 = 32u / bits;
    }
    uint per = _2050;
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
                float x = ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241);
                for (uint j_1 = 0u; j_1 < 8u; j_1++)
                {
                    uint o = min((o0 + j_1), (n_out - 1u));
                    if (bits == 0u)
                    {
                        uint param_2 = r1.z;
                        uint param_3 = (r1.w + (o * n_in)) + k;
                        uint param_4 = dt;
                        wv = ldt(param_2, param_3, param_4, v_199, v_209, v_217, v_225, v_233, v_241);
                    }
                    else
                    {
                        uint param_5 = r1.z;
                        uint param_6 = (r1.w + (o * (n_in / per))) + (k / per);
                        uint word = ld(param_5, param_6, v_199, v_209, v_217, v_225, v_233, v_241);
                        float q = float((word >> ((k % per) * bits)) & ((1u << bits) - 1u));
                        uint gi = (o * (n_in / gsize)) + (k / gsize);
                        uint param_7 = r2.x;
                        uint param_8 = r2.y + gi;
                        uint param_9 = dt;
                        uint param_10 = r2.z;
                        uint param_11 = r2.w + gi;
                        uint param_12 = dt;
                        wv = (ldt(param_7, param_8, param_9, v_199, v_209, v_217, v_225, v_233, v_241) * q) + ldt(param_10, param_11, param_12, v_199, v_209, v_217, v_225, v_233, v_241);
                    }
                    acc[j_1] += (x * wv);
                }
            }
            for (uint j_2 = 0u; j_2 < 8u; j_2++)
            {
                float s = simd_sum(acc[j_2]);
                bool _2240 = simd_is_first();
                if (_2240)
                {
                    s_part[(gl_SubgroupID * 8u) + j_2] = s;
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            bool _2253 = t < 8u;
            bool _2261;
            if (_2253)
            {
                _2261 = (o0 + t) < n_out;
            }
            else
            {
                _2261 = _2253;
            }
            if (_2261)
            {
                float s_1 = 0.0;
                for (uint i = 0u; i < gl_NumSubgroups; i++)
                {
                    s_1 += s_part[(i * 8u) + t];
                }
                uint param_13 = r3.x;
                uint param_14 = ((r3.y + (row * ldd)) + o0) + t;
                float param_15 = s_1;
                stf(param_13, param_14, param_15, v_199, v_217, v_225, v_233, v_241);
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
    float _138;
    if (x < 0.0)
    {
        _138 = -r;
    }
    else
    {
        _138 = r;
    }
    return _138;
}

static inline __attribute__((always_inline))
float elt(thread const uint& op, thread const float& x, thread const float& y, thread const float& f)
{
    switch (op)
    {
        case 0u:
        {
            return x + y;
        }
        case 1u:
        {
            return x * y;
        }
        case 2u:
        {
            return x * f;
        }
        case 3u:
        {
            float param = x / f;
            return safe_tanh(param) * f;
        }
        case 4u:
        {
            float param_1 = 0.79788458347320556640625 * (x + (((0.0447149984538555145263671875 * x) * x) * x));
            return (0.5 * x) * (1.0 + safe_tanh(param_1));
        }
        case 6u:
        {
            return x / (1.0 + exp(-x));
        }
    }
    return x;
}

static inline __attribute__((always_inline))
void op_elt(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID)
{
    uint total = r0.y;
    uint nb = r0.z;
    uint op = r0.w;
    float f = as_type<float>(r2.z);
    bool binary = op <= 1u;
    spvUnsafeArray<float, 8> xa;
    spvUnsafeArray<float, 8> xb;
    for (uint base = 0u; base < total; base += 2048u)
    {
        for (uint k = 0u; k < 8u; k++)
        {
            uint i = (base + (k * 256u)) + gl_LocalInvocationID.x;
            xa[k] = 0.0;
            xb[k] = 0.0;
            if (i < total)
            {
                uint param = r1.x;
                uint param_1 = r1.y + i;
                xa[k] = ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241);
                if (binary)
                {
                    uint param_2 = r1.z;
                    uint param_3 = r1.w + (i % nb);
                    xb[k] = ldf(param_2, param_3, v_199, v_209, v_217, v_225, v_233, v_241);
                }
            }
        }
        for (uint k_1 = 0u; k_1 < 8u; k_1++)
        {
            uint i_1 = (base + (k_1 * 256u)) + gl_LocalInvocationID.x;
            if (i_1 < total)
            {
                uint param_4 = op;
                float param_5 = xa[k_1];
                float param_6 = xb[k_1];
                float param_7 = f;
                uint param_8 = r2.x;
                uint param_9 = r2.y + i_1;
                float param_10 = elt(param_4, param_5, param_6, param_7);
                stf(param_8, param_9, param_10, v_199, v_217, v_225, v_233, v_241);
            }
        }
    }
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _152 = simd_is_first();
    if (_152)
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
void row_sums(thread const spvUnsafeArray<float, 16>& v, thread const bool& squares, thread const uint& n, thread const uint& rows, thread const uint& total, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, thread uint3& gl_LocalInvocationID, threadgroup float (&s_row)[64])
{
    float _550;
    for (uint row = 0u; row < rows; row++)
    {
        float s = 0.0;
        for (uint k = 0u; k < 16u; k++)
        {
            uint e = (k * 256u) + gl_LocalInvocationID.x;
            bool _538 = e < total;
            bool _546;
            if (_538)
            {
                _546 = (e / n) == row;
            }
            else
            {
                _546 = _538;
            }
            if (_546)
            {
                if (squares)
                {
                    _550 = v[k] * v[k];
                }
                else
                {
                    _550 = v[k];
                }
                s += _550;
            }
        }
        float param = s;
        float _571 = wg_sum(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        s = _571;
        if (gl_LocalInvocationID.x == 0u)
        {
            s_row[row] = s;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

static inline __attribute__((always_inline))
void op_norm(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID, threadgroup float (&s_row)[64], threadgroup float (&s_row2)[64])
{
    uint n = r0.y;
    uint rows = r0.z;
    uint flags = r0.w;
    bool hasW = (flags & 1u) != 0u;
    bool center = (flags & 2u) != 0u;
    bool hasB = (flags & 4u) != 0u;
    float eps = as_type<float>(r3.z);
    uint t = gl_LocalInvocationID.x;
    uint total = n * rows;
    if ((total <= 4096u) && (rows <= 64u))
    {
        spvUnsafeArray<float, 16> v;
        float _645;
        for (uint k = 0u; k < 16u; k++)
        {
            uint e = (k * 256u) + t;
            if (e < total)
            {
                uint param = r1.x;
                uint param_1 = r1.y + e;
                _645 = ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241);
            }
            else
            {
                _645 = 0.0;
            }
            v[k] = _645;
        }
        spvUnsafeArray<float, 16> wv;
        spvUnsafeArray<float, 16> bv;
        for (uint k_1 = 0u; k_1 < 16u; k_1++)
        {
            uint e_1 = (k_1 * 256u) + t;
            wv[k_1] = 1.0;
            bv[k_1] = 0.0;
            if (e_1 < total)
            {
                if (hasW)
                {
                    uint param_2 = r1.z;
                    uint param_3 = r1.w + (e_1 % n);
                    uint param_4 = r3.x;
                    wv[k_1] = ldt(param_2, param_3, param_4, v_199, v_209, v_217, v_225, v_233, v_241);
                }
                if (hasB)
                {
                    uint param_5 = r2.z;
                    uint param_6 = r2.w + (e_1 % n);
                    uint param_7 = r3.y;
                    bv[k_1] = ldt(param_5, param_6, param_7, v_199, v_209, v_217, v_225, v_233, v_241);
                }
            }
        }
        if (center)
        {
            if (t < rows)
            {
                uint param_8 = r1.x;
                uint param_9 = r1.y + (t * n);
                s_row2[t] = ldf(param_8, param_9, v_199, v_209, v_217, v_225, v_233, v_241);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint k_2 = 0u; k_2 < 16u; k_2++)
            {
                uint e_2 = (k_2 * 256u) + t;
                if (e_2 < total)
                {
                    v[k_2] -= s_row2[e_2 / n];
                }
            }
            spvUnsafeArray<float, 16> param_10;
            param_10 = v;
            bool param_11 = false;
            uint param_12 = n;
            uint param_13 = rows;
            uint param_14 = total;
            row_sums(param_10, param_11, param_12, param_13, param_14, red_scratch, gl_SubgroupID, gl_NumSubgroups, gl_LocalInvocationID, s_row);
            for (uint k_3 = 0u; k_3 < 16u; k_3++)
            {
                uint e_3 = (k_3 * 256u) + t;
                if (e_3 < total)
                {
                    v[k_3] -= (s_row[e_3 / n] / float(n));
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        spvUnsafeArray<float, 16> param_15;
        param_15 = v;
        bool param_16 = true;
        uint param_17 = n;
        uint param_18 = rows;
        uint param_19 = total;
        row_sums(param_15, param_16, param_17, param_18, param_19, red_scratch, gl_SubgroupID, gl_NumSubgroups, gl_LocalInvocationID, s_row);
        for (uint k_4 = 0u; k_4 < 16u; k_4++)
        {
            uint e_4 = (k_4 * 256u) + t;
            if (e_4 < total)
            {
                float inv = rsqrt((s_row[e_4 / n] / float(n)) + eps);
                float y = v[k_4] * inv;
                if (hasW)
                {
                    y *= wv[k_4];
                }
                if (hasB)
                {
                    y += bv[k_4];
                }
                uint param_20 = r2.x;
                uint param_21 = r2.y + e_4;
                float param_22 = y;
                stf(param_20, param_21, param_22, v_199, v_217, v_225, v_233, v_241);
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return;
    }
    for (uint row = 0u; row < rows; row++)
    {
        uint xb = r1.y + (row * n);
        uint db = r2.y + (row * n);
        float shift = 0.0;
        float mean = 0.0;
        if (center)
        {
            uint param_23 = r1.x;
            uint param_24 = xb;
            shift = ldf(param_23, param_24, v_199, v_209, v_217, v_225, v_233, v_241);
            float sum = 0.0;
            for (uint i = t; i < n; i += 256u)
            {
                uint param_25 = r1.x;
                uint param_26 = xb + i;
                sum += (ldf(param_25, param_26, v_199, v_209, v_217, v_225, v_233, v_241) - shift);
            }
            float param_27 = sum;
            float _960 = wg_sum(param_27, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            mean = _960 / float(n);
        }
        float ss = 0.0;
        for (uint i_1 = t; i_1 < n; i_1 += 256u)
        {
            uint param_28 = r1.x;
            uint param_29 = xb + i_1;
            float v_1 = (ldf(param_28, param_29, v_199, v_209, v_217, v_225, v_233, v_241) - shift) - mean;
            ss += (v_1 * v_1);
        }
        float param_30 = ss;
        float _998 = wg_sum(param_30, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float inv_1 = rsqrt((_998 / float(n)) + eps);
        for (uint i_2 = t; i_2 < n; i_2 += 256u)
        {
            uint param_31 = r1.x;
            uint param_32 = xb + i_2;
            float v_2 = ((ldf(param_31, param_32, v_199, v_209, v_217, v_225, v_233, v_241) - shift) - mean) * inv_1;
            if (hasW)
            {
                uint param_33 = r1.z;
                uint param_34 = r1.w + i_2;
                uint param_35 = r3.x;
                v_2 *= ldt(param_33, param_34, param_35, v_199, v_209, v_217, v_225, v_233, v_241);
            }
            if (hasB)
            {
                uint param_36 = r2.z;
                uint param_37 = r2.w + i_2;
                uint param_38 = r3.y;
                v_2 += ldt(param_36, param_37, param_38, v_199, v_209, v_217, v_225, v_233, v_241);
            }
            uint param_39 = r2.x;
            uint param_40 = db + i_2;
            float param_41 = v_2;
            stf(param_39, param_40, param_41, v_199, v_217, v_225, v_233, v_241);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

static inline __attribute__((always_inline))
void op_rowstat(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID)
{
    uint n = r0.y;
    uint rows = r0.z;
    uint op = r0.w;
    float f = as_type<float>(r2.z);
    uint t = gl_LocalInvocationID.x;
    spvUnsafeArray<float, 16> v;
    float _1141;
    spvUnsafeArray<float, 16> rv;
    float _1163;
    float _1256;
    float cut;
    float scale;
    float _1437;
    float _1491;
    for (uint row = 0u; row < rows; row++)
    {
        uint xb = r1.y + (row * n);
        uint rb = r1.w + (row * n);
        bool held = n <= 4096u;
        if (held)
        {
            for (uint k = 0u; k < 16u; k++)
            {
                uint i = (k * 256u) + t;
                if (i < n)
                {
                    uint param = r1.x;
                    uint param_1 = xb + i;
                    _1141 = ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241);
                }
                else
                {
                    _1141 = 0.0;
                }
                v[k] = _1141;
                if ((i < n) && (op != 0u))
                {
                    uint param_2 = r1.z;
                    uint param_3 = rb + i;
                    _1163 = ldf(param_2, param_3, v_199, v_209, v_217, v_225, v_233, v_241);
                }
                else
                {
                    _1163 = 0.0;
                }
                rv[k] = _1163;
            }
        }
        if (op == 0u)
        {
            float s = 0.0;
            if (held)
            {
                for (uint k_1 = 0u; k_1 < 16u; k_1++)
                {
                    s += v[k_1];
                }
            }
            else
            {
                for (uint i_1 = t; i_1 < n; i_1 += 256u)
                {
                    uint param_4 = r1.x;
                    uint param_5 = xb + i_1;
                    s += ldf(param_4, param_5, v_199, v_209, v_217, v_225, v_233, v_241);
                }
            }
            float param_6 = s;
            float _1228 = wg_sum(param_6, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float mean = _1228 / float(n);
            float q = 0.0;
            if (held)
            {
                for (uint k_2 = 0u; k_2 < 16u; k_2++)
                {
                    float d = v[k_2] - mean;
                    if (((k_2 * 256u) + t) < n)
                    {
                        _1256 = d * d;
                    }
                    else
                    {
                        _1256 = 0.0;
                    }
                    q += _1256;
                }
            }
            else
            {
                for (uint i_2 = t; i_2 < n; i_2 += 256u)
                {
                    uint param_7 = r1.x;
                    uint param_8 = xb + i_2;
                    float d_1 = ldf(param_7, param_8, v_199, v_209, v_217, v_225, v_233, v_241) - mean;
                    q += (d_1 * d_1);
                }
            }
            float param_9 = q;
            float _1301 = wg_sum(param_9, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            cut = mean + (sqrt(_1301 / float(n)) * f);
            scale = 1.0;
        }
        else
        {
            float sx = 0.0;
            float sr = 0.0;
            if (held)
            {
                for (uint k_3 = 0u; k_3 < 16u; k_3++)
                {
                    sx += (v[k_3] * v[k_3]);
                    sr += (rv[k_3] * rv[k_3]);
                }
            }
            else
            {
                for (uint i_3 = t; i_3 < n; i_3 += 256u)
                {
                    uint param_10 = r1.x;
                    uint param_11 = xb + i_3;
                    float a = ldf(param_10, param_11, v_199, v_209, v_217, v_225, v_233, v_241);
                    uint param_12 = r1.z;
                    uint param_13 = rb + i_3;
                    float b = ldf(param_12, param_13, v_199, v_209, v_217, v_225, v_233, v_241);
                    sx += (a * a);
                    sr += (b * b);
                }
            }
            float param_14 = sx;
            float _1388 = wg_sum(param_14, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float msx = _1388 / float(n);
            float param_15 = sr;
            float _1395 = wg_sum(param_15, red_scratch, gl_SubgroupID, gl_NumSubgroups);
            float msr = _1395 / float(n);
            scale = sqrt(msr) / sqrt(fast::max(msx, f));
            cut = 0.0;
        }
        if (held)
        {
            for (uint k_4 = 0u; k_4 < 16u; k_4++)
            {
                uint i_4 = (k_4 * 256u) + t;
                if (i_4 < n)
                {
                    if (op == 0u)
                    {
                        _1437 = fast::max(0.0, v[k_4] - cut);
                    }
                    else
                    {
                        _1437 = v[k_4] * scale;
                    }
                    uint param_16 = r2.x;
                    uint param_17 = (r2.y + (row * n)) + i_4;
                    float param_18 = _1437;
                    stf(param_16, param_17, param_18, v_199, v_217, v_225, v_233, v_241);
                }
            }
        }
        else
        {
            for (uint i_5 = t; i_5 < n; i_5 += 256u)
            {
                uint param_19 = r1.x;
                uint param_20 = xb + i_5;
                float a_1 = ldf(param_19, param_20, v_199, v_209, v_217, v_225, v_233, v_241);
                if (op == 0u)
                {
                    _1491 = fast::max(0.0, a_1 - cut);
                }
                else
                {
                    _1491 = a_1 * scale;
                }
                uint param_21 = r2.x;
                uint param_22 = (r2.y + (row * n)) + i_5;
                float param_23 = _1491;
                stf(param_21, param_22, param_23, v_199, v_217, v_225, v_233, v_241);
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

static inline __attribute__((always_inline))
void op_streams(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, thread const uint4& r3, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID)
{
    uint op = r0.y;
    uint S = r0.z;
    uint n = r0.w;
    uint N = r1.x;
    uint R = r1.y;
    uint total = r1.z;
    spvUnsafeArray<float, 8> out_;
    for (uint base = 0u; base < total; base += 2048u)
    {
        for (uint k = 0u; k < 8u; k++)
        {
            uint id = (base + (k * 256u)) + gl_LocalInvocationID.x;
            out_[k] = 0.0;
            if (id >= total)
            {
                continue;
            }
            uint i = id % N;
            uint rest = id / N;
            if (op == 0u)
            {
                uint t = rest % n;
                uint r = rest / n;
                float s = 0.0;
                for (uint j = 0u; j < S; j++)
                {
                    uint param = r2.z;
                    uint param_1 = ((r2.w + ((t * R) * S)) + (r * S)) + j;
                    uint param_2 = r2.x;
                    uint param_3 = (r2.y + (((j * n) + t) * N)) + i;
                    s += (ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241) * ldf(param_2, param_3, v_199, v_209, v_217, v_225, v_233, v_241));
                }
                out_[k] = s;
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
                    out_[k] = ldf(param_4, param_5, v_199, v_209, v_217, v_225, v_233, v_241) + (ldf(param_6, param_7, v_199, v_209, v_217, v_225, v_233, v_241) * ldf(param_8, param_9, v_199, v_209, v_217, v_225, v_233, v_241));
                }
                else
                {
                    uint aa = rest % S;
                    uint bb = rest / S;
                    uint param_10 = r2.x;
                    uint param_11 = (r2.y + (((aa * n) + bb) * N)) + i;
                    out_[k] = ldf(param_10, param_11, v_199, v_209, v_217, v_225, v_233, v_241);
                }
            }
        }
        for (uint k_1 = 0u; k_1 < 8u; k_1++)
        {
            uint id_1 = (base + (k_1 * 256u)) + gl_LocalInvocationID.x;
            if (id_1 < total)
            {
                uint param_12 = r3.z;
                uint param_13 = r3.w + id_1;
                float param_14 = out_[k_1];
                stf(param_12, param_13, param_14, v_199, v_217, v_225, v_233, v_241);
            }
        }
    }
}

static inline __attribute__((always_inline))
void op_rope(thread const uint4& r0, thread const uint4& r1, thread const uint4& r2, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID)
{
    uint rows = r0.y;
    uint heads = r0.z;
    uint hd = r0.w;
    uint half_dims = r1.x;
    uint pos0 = r1.y;
    uint inter = r1.z;
    uint total = (rows * heads) * half_dims;
    spvUnsafeArray<float, 8> x1;
    spvUnsafeArray<float, 8> x2;
    spvUnsafeArray<float, 8> th;
    uint _1839;
    uint _1929;
    for (uint base = 0u; base < total; base += 2048u)
    {
        for (uint k = 0u; k < 8u; k++)
        {
            uint id = (base + (k * 256u)) + gl_LocalInvocationID.x;
            x1[k] = 0.0;
            x2[k] = 0.0;
            th[k] = 0.0;
            if (id < total)
            {
                uint i = id % half_dims;
                uint rh = id / half_dims;
                if (inter != 0u)
                {
                    _1839 = 2u * i;
                }
                else
                {
                    _1839 = i;
                }
                uint b1 = (r2.y + (rh * hd)) + _1839;
                uint b2 = b1 + ((inter != 0u) ? 1u : half_dims);
                uint param = r2.x;
                uint param_1 = b1;
                x1[k] = ldf(param, param_1, v_199, v_209, v_217, v_225, v_233, v_241);
                uint param_2 = r2.x;
                uint param_3 = b2;
                x2[k] = ldf(param_2, param_3, v_199, v_209, v_217, v_225, v_233, v_241);
                uint param_4 = r2.z;
                uint param_5 = r2.w + i;
                th[k] = float(pos0 + (rh / heads)) * ldf(param_4, param_5, v_199, v_209, v_217, v_225, v_233, v_241);
            }
        }
        for (uint k_1 = 0u; k_1 < 8u; k_1++)
        {
            uint id_1 = (base + (k_1 * 256u)) + gl_LocalInvocationID.x;
            if (id_1 < total)
            {
                uint i_1 = id_1 % half_dims;
                uint rh_1 = id_1 / half_dims;
                if (inter != 0u)
                {
                    _1929 = 2u * i_1;
                }
                else
                {
                    _1929 = i_1;
                }
                uint b1_1 = (r2.y + (rh_1 * hd)) + _1929;
                uint b2_1 = b1_1 + ((inter != 0u) ? 1u : half_dims);
                float theta = th[k_1];
                float kk = floor((theta * 0.15915493667125701904296875) + 0.5);
                float r = fma(-kk, 6.25, theta);
                r = fma(-kk, 0.033203125, r);
                r = fma(-kk, -1.7817819752963259816169738769531e-05, r);
                float c = cos(r);
                float s = sin(r);
                uint param_6 = r2.x;
                uint param_7 = b1_1;
                float param_8 = (x1[k_1] * c) - (x2[k_1] * s);
                stf(param_6, param_7, param_8, v_199, v_217, v_225, v_233, v_241);
                uint param_9 = r2.x;
                uint param_10 = b2_1;
                float param_11 = (x2[k_1] * c) + (x1[k_1] * s);
                stf(param_9, param_10, param_11, v_199, v_217, v_225, v_233, v_241);
            }
        }
    }
}

static inline __attribute__((always_inline))
void run_tail(threadgroup float (&red_scratch)[256], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups, volatile device B1& v_199, const device B3& v_209, volatile device B4& v_217, volatile device B5& v_225, volatile device B6& v_233, volatile device B7& v_241, thread uint3& gl_LocalInvocationID, threadgroup float (&s_row)[64], threadgroup float (&s_row2)[64], threadgroup float (&s_part)[256], constant Params& p)
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
                op_elt(param, param_1, param_2, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID);
                break;
            }
            case 2u:
            {
                uint4 param_3 = r0;
                uint4 param_4 = r1;
                uint4 param_5 = r2;
                uint4 param_6 = r3;
                op_norm(param_3, param_4, param_5, param_6, red_scratch, gl_SubgroupID, gl_NumSubgroups, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID, s_row, s_row2);
                break;
            }
            case 3u:
            {
                uint4 param_7 = r0;
                uint4 param_8 = r1;
                uint4 param_9 = r2;
                op_rowstat(param_7, param_8, param_9, red_scratch, gl_SubgroupID, gl_NumSubgroups, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID);
                break;
            }
            case 4u:
            {
                uint4 param_10 = r0;
                uint4 param_11 = r1;
                uint4 param_12 = r2;
                uint4 param_13 = r3;
                op_streams(param_10, param_11, param_12, param_13, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID);
                break;
            }
            case 5u:
            {
                uint4 param_14 = r0;
                uint4 param_15 = r1;
                uint4 param_16 = r2;
                op_rope(param_14, param_15, param_16, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID);
                break;
            }
            default:
            {
                uint4 param_17 = r0;
                uint4 param_18 = r1;
                uint4 param_19 = r2;
                uint4 param_20 = r3;
                op_mv(param_17, param_18, param_19, param_20, gl_SubgroupID, gl_NumSubgroups, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID, s_part);
                break;
            }
        }
        if ((r0.x & 256u) == 0u)
        {
            threadgroup_barrier(mem_flags::mem_device);
        }
    }
}

kernel void vchain(constant Params& p [[buffer(0)]], volatile device B1& v_199 [[buffer(1)]], const device B3& v_209 [[buffer(3)]], volatile device B4& v_217 [[buffer(4)]], volatile device B5& v_225 [[buffer(5)]], volatile device B6& v_233 [[buffer(6)]], volatile device B7& v_241 [[buffer(7)]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red_scratch[256];
    threadgroup float s_row[64];
    threadgroup float s_row2[64];
    threadgroup float s_part[256];
    threadgroup uint s_last;
    if (p.ntail == 0u)
    {
        return;
    }
    threadgroup_barrier(mem_flags::mem_device);
    if (p.nwg > 1u)
    {
        if (gl_LocalInvocationID.x == 0u)
        {
            uint _2446 = atomic_fetch_add_explicit((volatile device atomic_uint*)&v_199.act[p.counter], 1u, memory_order_relaxed);
            s_last = uint(_2446 == (p.nwg - 1u));
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (s_last == 0u)
        {
            return;
        }
        threadgroup_barrier(mem_flags::mem_device);
    }
    run_tail(red_scratch, gl_SubgroupID, gl_NumSubgroups, v_199, v_209, v_217, v_225, v_233, v_241, gl_LocalInvocationID, s_row, s_row2, s_part, p);
    bool _2460 = p.nwg > 1u;
    bool _2466;
    if (_2460)
    {
        _2466 = gl_LocalInvocationID.x == 0u;
    }
    else
    {
        _2466 = _2460;
    }
    if (_2466)
    {
        v_199.act[p.counter] = 0u;
    }
}

