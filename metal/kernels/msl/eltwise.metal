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
    uint nb;
    uint op;
    float f;
};

struct A
{
    float a[1];
};

struct Bv
{
    float b[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_id(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups, thread uint3& gl_LocalInvocationID)
{
    return (((gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x) * 256u) + gl_LocalInvocationID.x;
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _33;
    if (x < 0.0)
    {
        _33 = -r;
    }
    else
    {
        _33 = r;
    }
    return _33;
}

kernel void eltwise(constant Params& p [[buffer(0)]], const device A& _86 [[buffer(1)]], const device Bv& _112 [[buffer(2)]], device D& _187 [[buffer(3)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint i = linear_id(gl_WorkGroupID, gl_NumWorkGroups, gl_LocalInvocationID);
    if (i >= p.n)
    {
        return;
    }
    float x = _86.a[p.ob1 + i];
    float y;
    switch (p.op)
    {
        case 0u:
        {
            y = x + _112.b[p.ob2 + (i % p.nb)];
            break;
        }
        case 1u:
        {
            y = x * _112.b[p.ob2 + (i % p.nb)];
            break;
        }
        case 2u:
        {
            y = x * p.f;
            break;
        }
        case 3u:
        {
            float param = x / p.f;
            y = safe_tanh(param) * p.f;
            break;
        }
        case 4u:
        {
            float param_1 = 0.79788458347320556640625 * (x + (((0.0447149984538555145263671875 * x) * x) * x));
            y = (0.5 * x) * (1.0 + safe_tanh(param_1));
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
    _187.dst[p.ob3 + i] = y;
}

