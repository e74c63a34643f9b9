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
    uint op;
    uint S;
    uint n;
    uint N;
    uint R;
    uint total;
};

struct C
{
    float coef[1];
};

struct X
{
    float x[1];
};

struct D
{
    float dst[1];
};

struct Bv
{
    float b[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_id(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups, thread uint3& gl_LocalInvocationID)
{
    return (((gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x) * 256u) + gl_LocalInvocationID.x;
}

kernel void streams(constant Params& p [[buffer(0)]], const device X& _123 [[buffer(1)]], const device C& _96 [[buffer(2)]], const device Bv& _197 [[buffer(3)]], device D& _149 [[buffer(4)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint id = linear_id(gl_WorkGroupID, gl_NumWorkGroups, gl_LocalInvocationID);
    if (id >= p.total)
    {
        return;
    }
    uint i = id % p.N;
    uint rest = id / p.N;
    if (p.op == 0u)
    {
        uint t = rest % p.n;
        uint r = rest / p.n;
        float s = 0.0;
        for (uint k = 0u; k < p.S; k++)
        {
            s += (_96.coef[((p.ob2 + ((t * p.R) * p.S)) + (r * p.S)) + k] * _123.x[(p.ob1 + (((k * p.n) + t) * p.N)) + i]);
        }
        _149.dst[p.ob4 + id] = s;
    }
    else
    {
        if (p.op == 1u)
        {
            uint t_1 = rest % p.n;
            uint s_1 = rest / p.n;
            _149.dst[p.ob4 + id] = _123.x[p.ob1 + id] + (_96.coef[(p.ob2 + (t_1 * p.S)) + s_1] * _197.b[(p.ob3 + (t_1 * p.N)) + i]);
        }
        else
        {
            uint aa = rest % p.S;
            uint bb = rest / p.S;
            _149.dst[p.ob4 + id] = _123.x[(p.ob1 + (((aa * p.n) + bb) * p.N)) + i];
        }
    }
}

