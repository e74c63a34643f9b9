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
    uint span;
    uint mode;
};

struct X
{
    uint x[1];
};

struct D
{
    uint dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
uint key(thread uint& b)
{
    if ((b & 2147483647u) > 2139095040u)
    {
        return 0u;
    }
    if (b == 2147483648u)
    {
        b = 0u;
    }
    uint _49;
    if ((b & 2147483648u) != 0u)
    {
        _49 = ~b;
    }
    else
    {
        _49 = b | 2147483648u;
    }
    return _49;
}

kernel void argmax(constant Params& p [[buffer(0)]], const device X& _141 [[buffer(1)]], device D& _304 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]])
{
    threadgroup uint sk[128];
    threadgroup uint si[128];
    uint t = gl_LocalInvocationID.x;
    uint row;
    uint lo;
    uint hi;
    if (p.mode == 1u)
    {
        row = gl_WorkGroupID.y;
        lo = gl_WorkGroupID.x * p.span;
        hi = min(p.n, (lo + p.span));
    }
    else
    {
        row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
        lo = 0u;
        hi = p.n;
    }
    if (row >= p.rows)
    {
        return;
    }
    uint bk = 8388607u;
    uint bi = 4294967295u;
    if (p.mode == 2u)
    {
        uint base = p.ob1 + ((2u * row) * p.n);
        for (uint i = t; i < p.n; i += 128u)
        {
            uint k = _141.x[base + (2u * i)];
            if (k > bk)
            {
                bk = k;
                bi = _141.x[(base + (2u * i)) + 1u];
            }
        }
    }
    else
    {
        uint base_1 = p.ob1 + (row * p.n);
        uint _178 = lo + t;
        for (uint i_1 = _178; i_1 < hi; i_1 += 128u)
        {
            uint param = _141.x[base_1 + i_1];
            uint _194 = key(param);
            uint k_1 = _194;
            if (k_1 > bk)
            {
                bk = k_1;
                bi = i_1;
            }
        }
    }
    uint mk = simd_max(bk);
    uint mi = simd_min((bk == mk) ? bi : 4294967295u);
    bool _215 = simd_is_first();
    if (_215)
    {
        sk[gl_SubgroupID] = mk;
        si[gl_SubgroupID] = mi;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0u)
    {
        uint k_2 = sk[0];
        uint i_2 = si[0];
        for (uint s = 1u; s < gl_NumSubgroups; s++)
        {
            bool _255 = sk[s] > k_2;
            bool _272;
            if (!_255)
            {
                bool _263 = sk[s] == k_2;
                bool _271;
                if (_263)
                {
                    _271 = si[s] < i_2;
                }
                else
                {
                    _271 = _263;
                }
                _272 = _271;
            }
            else
            {
                _272 = _255;
            }
            if (_272)
            {
                k_2 = sk[s];
                i_2 = si[s];
            }
        }
        if (p.mode == 1u)
        {
            uint o = p.ob2 + (2u * ((row * gl_NumWorkGroups.x) + gl_WorkGroupID.x));
            _304.dst[o] = k_2;
            _304.dst[o + 1u] = i_2;
        }
        else
        {
            _304.dst[p.ob2 + row] = (i_2 == 4294967295u) ? 0u : i_2;
        }
    }
}

