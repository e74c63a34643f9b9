#pragma clang diagnostic ignored "-Wmissing-prototypes"
#pragma clang diagnostic ignored "-Wmissing-braces"

#include <metal_stdlib>
#include <simd/simd.h>

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

struct X
{
    float4 x[1];
};

struct D
{
    float dst[1];
};

struct B6
{
    float b6[1];
};

struct B7
{
    float b7[1];
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
    uint n_in;
    uint n_out;
    uint ldd;
    uint out0;
    uint gsize;
    uint sdt;
    uint nepi;
    uint pad0;
    uint4 epi[4];
};

struct W
{
    uint4 w[1];
};

struct S
{
    uint sc[1];
};

struct B
{
    uint bi[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _45;
    if (dt == 2u)
    {
        _45 = as_type<float>(bits << uint(16));
    }
    else
    {
        _45 = float2(as_type<half2>(bits)).x;
    }
    return _45;
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device X& v_98, device D& v_113, device B6& v_121, device B7& v_129)
{
    switch (s)
    {
        case 1u:
        {
            return ((device float*)&v_98.x[i >> uint(2)])[i & 3u];
        }
        case 5u:
        {
            return v_113.dst[i];
        }
        case 6u:
        {
            return v_121.b6[i];
        }
        default:
        {
            return v_129.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _78;
    if (x < 0.0)
    {
        _78 = -r;
    }
    else
    {
        _78 = r;
    }
    return _78;
}

static inline __attribute__((always_inline))
float epi_elt(thread const uint& op, thread const float& x, thread const float& y, thread const float& f)
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
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_113, device B6& v_121, device B7& v_129)
{
    switch (s)
    {
        case 5u:
        {
            v_113.dst[i] = v;
            break;
        }
        case 6u:
        {
            v_121.b6[i] = v;
            break;
        }
        default:
        {
            v_129.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device X& v_98, device D& v_113, device B6& v_121, device B7& v_129, constant Params& p)
{
    float _288;
    for (uint k = 0u; k < p.nepi; k++)
    {
        uint4 e = p.epi[k];
        uint op = e.x & 255u;
        uint slot = (e.x >> uint(8)) & 15u;
        float f = as_type<float>(e.w);
        if ((e.x & 65536u) != 0u)
        {
            uint j = e.y + i;
            uint param = slot;
            uint param_1 = j;
            uint param_2 = op;
            float param_3 = ldv(param, param_1, v_98, v_113, v_121, v_129);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_113, v_121, v_129);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _288 = ldv(param_9, param_10, v_98, v_113, v_121, v_129);
            }
            else
            {
                _288 = 0.0;
            }
            float b = _288;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

kernel void qmvxw4(constant Params& p [[buffer(0)]], const device X& v_98 [[buffer(1)]], const device W& _454 [[buffer(2)]], const device S& _483 [[buffer(3)]], const device B& _527 [[buffer(4)]], device D& v_113 [[buffer(5)]], device B6& v_121 [[buffer(6)]], device B7& v_129 [[buffer(7)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]])
{
    threadgroup float part[256];
    uint r = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * 4u;
    uint tid = gl_LocalInvocationID.x;
    uint cpr = p.n_in / 32u;
    uint gpr = p.n_in / p.gsize;
    spvUnsafeArray<float, 4> acc;
    for (uint j = 0u; j < 4u; j++)
    {
        acc[j] = 0.0;
    }
    spvUnsafeArray<float4, 8> xv;
    float _477;
    float _521;
    for (uint c = tid; c < cpr; c += 64u)
    {
        uint xb = p.ob1 + (((r * p.n_in) + (c * 32u)) / 4u);
        float xs = 0.0;
        for (uint i = 0u; i < 8u; i++)
        {
            float4 v = v_98.x[xb + i];
            xs += ((v.x + v.y) + (v.z + v.w));
            xv[i] = v * float4(1.0, 0.0625, 0.00390625, 0.000244140625);
        }
        uint g = (c * 32u) / p.gsize;
        for (uint j_1 = 0u; j_1 < 4u; j_1++)
        {
            uint row = min((row0 + j_1), (p.n_out - 1u));
            uint4 wq = _454.w[(p.ob2 + (row * cpr)) + c];
            uint si = (row * gpr) + g;
            if (p.sdt == 0u)
            {
                _477 = as_type<float>(_483.sc[p.ob3 + si]);
            }
            else
            {
                uint param = (_483.sc[(p.ob3 + si) >> uint(1)] >> (((p.ob3 + si) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.sdt;
                _477 = cvt16(param, param_1);
            }
            float s = _477;
            if (p.sdt == 0u)
            {
                _521 = as_type<float>(_527.bi[p.ob4 + si]);
            }
            else
            {
                uint param_2 = (_527.bi[(p.ob4 + si) >> uint(1)] >> (((p.ob4 + si) & 1u) << uint(4))) & 65535u;
                uint param_3 = p.sdt;
                _521 = cvt16(param_2, param_3);
            }
            float b = _521;
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
    for (uint j_2 = 0u; j_2 < 4u; j_2++)
    {
        float s_1 = simd_sum(acc[j_2]);
        bool _646 = simd_is_first();
        if (_646)
        {
            part[(gl_SubgroupID * 4u) + j_2] = s_1;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    bool _665 = tid < 4u;
    bool _674;
    if (_665)
    {
        _674 = (row0 + tid) < p.n_out;
    }
    else
    {
        _674 = _665;
    }
    if (_674)
    {
        float t = 0.0;
        for (uint i_1 = 0u; i_1 < gl_NumSubgroups; i_1++)
        {
            t += part[(i_1 * 4u) + tid];
        }
        float param_4 = t;
        uint param_5 = row0 + tid;
        float _704 = epi_run(param_4, param_5, v_98, v_113, v_121, v_129, p);
        t = _704;
        v_113.dst[(((p.ob5 + (r * p.ldd)) + p.out0) + row0) + tid] = t;
    }
}

