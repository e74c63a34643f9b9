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
    uint rows;
    uint heads;
    uint head_dim;
    uint half_dims;
    uint pos0;
    uint interleaved;
};

struct F
{
    float invf[1];
};

struct X
{
    float x[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_id(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups, thread uint3& gl_LocalInvocationID)
{
    return (((gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x) * 64u) + gl_LocalInvocationID.x;
}

kernel void rope(constant Params& p [[buffer(0)]], device X& _167 [[buffer(1)]], const device F& _87 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint id = linear_id(gl_WorkGroupID, gl_NumWorkGroups, gl_LocalInvocationID);
    uint total = (p.rows * p.heads) * p.half_dims;
    if (id >= total)
    {
        return;
    }
    uint i = id % p.half_dims;
    uint rh = id / p.half_dims;
    uint row = rh / p.heads;
    float theta = float(p.pos0 + row) * _87.invf[p.ob2 + i];
    float k = floor((theta * 0.15915493667125701904296875) + 0.5);
    float r = fma(-k, 6.25, theta);
    r = fma(-k, 0.033203125, r);
    r = fma(-k, -1.7817819752963259816169738769531e-05, r);
    float c = cos(r);
    float s = sin(r);
    uint b1 = (p.ob1 + (rh * p.head_dim)) + i;
    uint b2 = b1 + p.half_dims;
    if (p.interleaved != 0u)
    {
        b1 = (p.ob1 + (rh * p.head_dim)) + (2u * i);
        b2 = b1 + 1u;
    }
    float x1 = _167.x[b1];
    float x2 = _167.x[b2];
    _167.x[b1] = (x1 * c) - (x2 * s);
    _167.x[b2] = (x2 * c) + (x1 * s);
}

