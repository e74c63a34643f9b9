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
};

struct X
{
    float4 x[1];
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

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _19;
    if (dt == 2u)
    {
        _19 = as_type<float>(bits << uint(16));
    }
    else
    {
        _19 = float2(as_type<half2>(bits)).x;
    }
    return _19;
}

kernel void qmvw8(constant Params& p [[buffer(0)]], const device X& _124 [[buffer(1)]], const device W& _187 [[buffer(2)]], const device S& _217 [[buffer(3)]], const device B& _261 [[buffer(4)]], device D& _417 [[buffer(5)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]])
{
    threadgroup float part[256];
    uint r = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * 4u;
    uint tid = gl_LocalInvocationID.x;
    uint cpr = p.n_in / 16u;
    uint gpr = p.n_in / p.gsize;
    spvUnsafeArray<float, 4> acc;
    for (uint j = 0u; j < 4u; j++)
    {
        acc[j] = 0.0;
    }
    spvUnsafeArray<float4, 4> xv;
    float _211;
    float _255;
    for (uint c = tid; c < cpr; c += 64u)
    {
        uint xb = p.ob1 + (((r * p.n_in) + (c * 16u)) / 4u);
        float xs = 0.0;
        for (uint i = 0u; i < 4u; i++)
        {
            float4 v = _124.x[xb + i];
            xs += ((v.x + v.y) + (v.z + v.w));
            xv[i] = v * float4(1.0, 0.00390625, 1.0, 0.00390625);
        }
        uint g = (c * 16u) / p.gsize;
        for (uint j_1 = 0u; j_1 < 4u; j_1++)
        {
            uint row = min((row0 + j_1), (p.n_out - 1u));
            uint4 wq = _187.w[(p.ob2 + (row * cpr)) + c];
            uint si = (row * gpr) + g;
            if (p.sdt == 0u)
            {
                _211 = as_type<float>(_217.sc[p.ob3 + si]);
            }
            else
            {
                uint param = (_217.sc[(p.ob3 + si) >> uint(1)] >> (((p.ob3 + si) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.sdt;
                _211 = cvt16(param, param_1);
            }
            float s = _211;
            if (p.sdt == 0u)
            {
                _255 = as_type<float>(_261.bi[p.ob4 + si]);
            }
            else
            {
                uint param_2 = (_261.bi[(p.ob4 + si) >> uint(1)] >> (((p.ob4 + si) & 1u) << uint(4))) & 65535u;
                uint param_3 = p.sdt;
                _255 = cvt16(param_2, param_3);
            }
            float b = _255;
            float d = 0.0;
            for (uint k = 0u; k < 4u; k++)
            {
                uint word = wq[k];
                uint4 q = uint4(word, word, word >> uint(16), word >> uint(16)) & uint4(255u, 65280u, 255u, 65280u);
                d += dot(as_type<float4>(q | uint4(1258291200u)) - float4(8388608.0), xv[k]);
            }
            acc[j_1] += ((s * d) + (b * xs));
        }
    }
    for (uint j_2 = 0u; j_2 < 4u; j_2++)
    {
        float s_1 = simd_sum(acc[j_2]);
        bool _362 = simd_is_first();
        if (_362)
        {
            part[(gl_SubgroupID * 4u) + j_2] = s_1;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    bool _381 = tid < 4u;
    bool _390;
    if (_381)
    {
        _390 = (row0 + tid) < p.n_out;
    }
    else
    {
        _390 = _381;
    }
    if (_390)
    {
        float t = 0.0;
        for (uint i_1 = 0u; i_1 < gl_NumSubgroups; i_1++)
        {
            t += part[(i_1 * 4u) + tid];
        }
        _417.dst[(((p.ob5 + (r * p.ldd)) + p.out0) + row0) + tid] = t;
    }
}

