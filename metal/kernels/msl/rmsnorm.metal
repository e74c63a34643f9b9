#pragma clang diagnostic ignored "-Wmissing-prototypes"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

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
    uint n;
    uint rows;
    uint has_w;
    uint wdt;
    float eps;
    uint center;
    uint has_b;
    uint bdt;
};

struct X
{
    float x[1];
};

struct Wt
{
    uint wt[1];
};

struct Bs
{
    uint bs[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(512u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[512], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _63 = simd_is_first();
    if (_63)
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
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _26;
    if (dt == 2u)
    {
        _26 = as_type<float>(bits << uint(16));
    }
    else
    {
        _26 = float2(as_type<half2>(bits)).x;
    }
    return _26;
}

kernel void rmsnorm(constant Params& p [[buffer(0)]], const device X& _130 [[buffer(1)]], const device Wt& _264 [[buffer(2)]], device D& _351 [[buffer(3)]], const device Bs& _316 [[buffer(4)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red_scratch[512];
    uint row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    if (row >= p.rows)
    {
        return;
    }
    uint base = row * p.n;
    float shift = 0.0;
    float mean = 0.0;
    if (p.center != 0u)
    {
        shift = _130.x[p.ob1 + base];
        float sum = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += 512u)
        {
            sum += (_130.x[(p.ob1 + base) + i] - shift);
        }
        float param = sum;
        float _169 = wg_sum(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        mean = _169 / float(p.n);
    }
    float ss = 0.0;
    for (uint i_1 = gl_LocalInvocationID.x; i_1 < p.n; i_1 += 512u)
    {
        float v = (_130.x[(p.ob1 + base) + i_1] - shift) - mean;
        ss += (v * v);
    }
    float param_1 = ss;
    float _210 = wg_sum(param_1, red_scratch, gl_SubgroupID, gl_NumSubgroups);
    float inv = rsqrt((_210 / float(p.n)) + p.eps);
    float _258;
    float _310;
    for (uint i_2 = gl_LocalInvocationID.x; i_2 < p.n; i_2 += 512u)
    {
        float v_1 = ((_130.x[(p.ob1 + base) + i_2] - shift) - mean) * inv;
        if (p.has_w != 0u)
        {
            if (p.wdt == 0u)
            {
                _258 = as_type<float>(_264.wt[p.ob2 + i_2]);
            }
            else
            {
                uint param_2 = (_264.wt[(p.ob2 + i_2) >> uint(1)] >> (((p.ob2 + i_2) & 1u) << uint(4))) & 65535u;
                uint param_3 = p.wdt;
                _258 = cvt16(param_2, param_3);
            }
            v_1 *= _258;
        }
        if (p.has_b != 0u)
        {
            if (p.bdt == 0u)
            {
                _310 = as_type<float>(_316.bs[p.ob4 + i_2]);
            }
            else
            {
                uint param_4 = (_316.bs[(p.ob4 + i_2) >> uint(1)] >> (((p.ob4 + i_2) & 1u) << uint(4))) & 65535u;
                uint param_5 = p.bdt;
                _310 = cvt16(param_4, param_5);
            }
            v_1 += _310;
        }
        _351.dst[(p.ob3 + base) + i_2] = v_1;
    }
}

