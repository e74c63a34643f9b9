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
};

struct X
{
    float x[1];
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

kernel void argmax(constant Params& p [[buffer(0)]], const device X& _76 [[buffer(1)]], device D& _204 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float bv[128];
    threadgroup uint bi[128];
    uint row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    if (row >= p.rows)
    {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.n;
    float best = as_type<float>(4286578688u);
    uint idx = 4294967295u;
    for (uint i = t; i < p.n; i += 128u)
    {
        float v = _76.x[(p.ob1 + base) + i];
        bool _90 = v > best;
        bool _102;
        if (!_90)
        {
            bool _95 = idx == 4294967295u;
            bool _101;
            if (_95)
            {
                _101 = !isnan(v);
            }
            else
            {
                _101 = _95;
            }
            _102 = _101;
        }
        else
        {
            _102 = _90;
        }
        if (_102)
        {
            best = v;
            idx = i;
        }
    }
    bv[t] = best;
    bi[t] = idx;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 64u; s > 0u; s = s >> uint(1))
    {
        if (t < s)
        {
            float ov = bv[t + s];
            uint oi = bi[t + s];
            bool _153 = oi != 4294967295u;
            bool _186;
            if (_153)
            {
                bool _159 = bi[t] == 4294967295u;
                bool _168;
                if (!_159)
                {
                    _168 = ov > bv[t];
                }
                else
                {
                    _168 = _159;
                }
                bool _185;
                if (!_168)
                {
                    bool _176 = ov == bv[t];
                    bool _184;
                    if (_176)
                    {
                        _184 = oi < bi[t];
                    }
                    else
                    {
                        _184 = _176;
                    }
                    _185 = _184;
                }
                else
                {
                    _185 = _168;
                }
                _186 = _185;
            }
            else
            {
                _186 = _153;
            }
            if (_186)
            {
                bv[t] = ov;
                bi[t] = oi;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0u)
    {
        uint _213;
        if (bi[0] == 4294967295u)
        {
            _213 = 0u;
        }
        else
        {
            _213 = bi[0];
        }
        _204.dst[p.ob2 + row] = _213;
    }
}

