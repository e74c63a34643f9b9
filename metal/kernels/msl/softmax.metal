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
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
float wg_max(thread const float& v, threadgroup float (&red_scratch)[128], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_max(v);
    bool _83 = simd_is_first();
    if (_83)
    {
        red_scratch[gl_SubgroupID] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = red_scratch[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++)
    {
        t = fast::max(t, red_scratch[i]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return t;
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[128], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _41 = simd_is_first();
    if (_41)
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

kernel void softmax(constant Params& p [[buffer(0)]], const device X& _152 [[buffer(1)]], device D& _217 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red_scratch[128];
    uint row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    if (row >= p.rows)
    {
        return;
    }
    uint base = row * p.n;
    float mx = as_type<float>(4286578688u);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += 128u)
    {
        mx = fast::max(mx, _152.x[(p.ob1 + base) + i]);
    }
    float param = mx;
    float _167 = wg_max(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
    mx = _167;
    float s = 0.0;
    for (uint i_1 = gl_LocalInvocationID.x; i_1 < p.n; i_1 += 128u)
    {
        s += exp(_152.x[(p.ob1 + base) + i_1] - mx);
    }
    float param_1 = s;
    float _200 = wg_sum(param_1, red_scratch, gl_SubgroupID, gl_NumSubgroups);
    float inv = 1.0 / _200;
    for (uint i_2 = gl_LocalInvocationID.x; i_2 < p.n; i_2 += 128u)
    {
        _217.dst[(p.ob2 + base) + i_2] = exp(_152.x[(p.ob1 + base) + i_2] - mx) * inv;
    }
}

