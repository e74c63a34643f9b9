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
    uint hq;
    uint d;
    uint splits;
};

struct P
{
    float part[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

kernel void attnmerge(constant Params& p [[buffer(0)]], const device P& _71 [[buffer(1)]], device D& _185 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint h = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint row = (r * p.hq) + h;
    uint stride = p.d + 2u;
    uint base = p.ob1 + ((row * p.splits) * stride);
    float mx = as_type<float>(4286578688u);
    for (uint s = 0u; s < p.splits; s++)
    {
        mx = fast::max(mx, _71.part[base + (s * stride)]);
    }
    float l = 0.0;
    for (uint s_1 = 0u; s_1 < p.splits; s_1++)
    {
        float ms = _71.part[base + (s_1 * stride)];
        if (!isinf(ms))
        {
            l += (_71.part[(base + (s_1 * stride)) + 1u] * exp(ms - mx));
        }
    }
    for (uint dim = gl_LocalInvocationID.x; dim < p.d; dim += 128u)
    {
        float a = 0.0;
        for (uint s_2 = 0u; s_2 < p.splits; s_2++)
        {
            float ms_1 = _71.part[base + (s_2 * stride)];
            if (!isinf(ms_1))
            {
                a += (_71.part[((base + (s_2 * stride)) + 2u) + dim] * exp(ms_1 - mx));
            }
        }
        _185.dst[(p.ob2 + (row * p.d)) + dim] = a / l;
    }
}

