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
    return (((gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x) * 1u) + gl_LocalInvocationID.x;
}

kernel void rope(constant Params& p [[buffer(0)]], device X& _142 [[buffer(1)]], const device F& _86 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
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
    float theta = float(p.pos0 + row) * _86.invf[p.ob2 + i];
    float k = floor((theta * 0.15915493667125701904296875) + 0.5);
    float r = fma(-k, 6.28125, theta);
    r = fma(-k, 0.00193530716933310031890869140625, r);
    r = fma(-k, 1.0253131677018245682120323181152e-11, r);
    float c = cos(r);
    float s = sin(r);
    uint b = (p.ob1 + (rh * p.head_dim)) + i;
    float x1 = _142.x[b];
    float x2 = _142.x[b + p.half_dims];
    _142.x[b] = (x1 * c) - (x2 * s);
    _142.x[b + p.half_dims] = (x2 * c) + (x1 * s);
}

