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
    uint op;
    float f;
};

struct X
{
    float x[1];
};

struct R
{
    float ref[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[128], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _38 = simd_is_first();
    if (_38)
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

kernel void rowstat(constant Params& p [[buffer(0)]], const device X& _123 [[buffer(1)]], const device R& _223 [[buffer(2)]], device D& _293 [[buffer(3)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red_scratch[128];
    uint row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    if (row >= p.rows)
    {
        return;
    }
    uint base = row * p.n;
    uint t = gl_LocalInvocationID.x;
    uint L = 128u;
    float cut;
    float scale;
    if (p.op == 0u)
    {
        float s = 0.0;
        for (uint i = t; i < p.n; i += L)
        {
            s += _123.x[(p.ob1 + base) + i];
        }
        float param = s;
        float _142 = wg_sum(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float mean = _142 / float(p.n);
        float v = 0.0;
        for (uint i_1 = t; i_1 < p.n; i_1 += L)
        {
            float d = _123.x[(p.ob1 + base) + i_1] - mean;
            v += (d * d);
        }
        float param_1 = v;
        float _182 = wg_sum(param_1, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        cut = mean + (sqrt(_182 / float(p.n)) * p.f);
        scale = 1.0;
    }
    else
    {
        float sx = 0.0;
        float sr = 0.0;
        for (uint i_2 = t; i_2 < p.n; i_2 += L)
        {
            float a = _123.x[(p.ob1 + base) + i_2];
            float b = _223.ref[(p.ob2 + base) + i_2];
            sx += (a * a);
            sr += (b * b);
        }
        float param_2 = sx;
        float _249 = wg_sum(param_2, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float msx = _249 / float(p.n);
        float param_3 = sr;
        float _257 = wg_sum(param_3, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float msr = _257 / float(p.n);
        scale = sqrt(msr) / sqrt(fast::max(msx, p.f));
        cut = 0.0;
    }
    float _304;
    for (uint i_3 = t; i_3 < p.n; i_3 += L)
    {
        float a_1 = _123.x[(p.ob1 + base) + i_3];
        if (p.op == 0u)
        {
            _304 = fast::max(0.0, a_1 - cut);
        }
        else
        {
            _304 = a_1 * scale;
        }
        _293.dst[(p.ob3 + base) + i_3] = _304;
    }
}

