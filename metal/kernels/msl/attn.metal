#pragma clang diagnostic ignored "-Wmissing-prototypes"
#pragma clang diagnostic ignored "-Wmissing-braces"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T, size_t Num>
struct spvUnsafeArray
{
    T elements[Num ? Num : 1];
    
    thread T& operator [] (size_t pos) thread
    {
        return elements[pos];
    }
    constexpr const thread T& operator [] (size_t pos) const thread
    {
        return elements[pos];
    }
    
    device T& operator [] (size_t pos) device
    {
        return elements[pos];
    }
    constexpr const device T& operator [] (size_t pos) const device
    {
        return elements[pos];
    }
    
    constexpr const constant T& operator [] (size_t pos) const constant
    {
        return elements[pos];
    }
    
    threadgroup T& operator [] (size_t pos) threadgroup
    {
        return elements[pos];
    }
    constexpr const threadgroup T& operator [] (size_t pos) const threadgroup
    {
        return elements[pos];
    }
};

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
    uint nq;
    uint nk;
    uint hq;
    uint hkv;
    uint d;
    uint qpos0;
    uint window;
    uint nspans;
    float scale;
    uint kps;
};

struct Q
{
    float q[1];
};

struct Sp
{
    uint spans[1];
};

struct K
{
    float kk[1];
};

struct V
{
    float vv[1];
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

static inline __attribute__((always_inline))
float wg_max(thread const float& v, threadgroup float (&red_scratch)[128], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_max(v);
    bool _65 = simd_is_first();
    if (_65)
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
    bool _21 = simd_is_first();
    if (_21)
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

kernel void attn(constant Params& p [[buffer(0)]], const device Q& _162 [[buffer(1)]], const device K& _345 [[buffer(2)]], const device V& _460 [[buffer(3)]], const device Sp& _264 [[buffer(4)]], device D& _592 [[buffer(5)]], device P& _516 [[buffer(6)]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float red_scratch[128];
    threadgroup float qs[512];
    threadgroup float pw[128];
    uint h = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint C = 128u;
    uint kvh = h / (p.hq / p.hkv);
    uint qpos = p.qpos0 + r;
    uint qbase = p.ob1 + (((r * p.hq) + h) * p.d);
    for (uint i = t; i < p.d; i += C)
    {
        qs[i] = _162.q[qbase + i] * p.scale;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = as_type<float>(4286578688u);
    float l = 0.0;
    spvUnsafeArray<float, 4> acc;
    for (uint j = 0u; j < 4u; j++)
    {
        acc[j] = 0.0;
    }
    uint kstride = p.hkv * p.d;
    uint k0 = 0u;
    uint k1 = p.nk;
    if (p.kps != 0u)
    {
        k0 = gl_WorkGroupID.z * p.kps;
        k1 = min(p.nk, (k0 + p.kps));
    }
    float _378;
    for (uint base = k0; base < k1; base += C)
    {
        uint key = base + t;
        float s = as_type<float>(4286578688u);
        if (key < k1)
        {
            uint kpos = 0u;
            for (uint i_1 = 0u; i_1 < p.nspans; i_1++)
            {
                uint first = _264.spans[(p.ob4 + (2u * i_1)) + 1u];
                if (key >= first)
                {
                    kpos = _264.spans[p.ob4 + (2u * i_1)] + (key - first);
                }
            }
            bool _295 = kpos <= qpos;
            bool _312;
            if (_295)
            {
                bool _301 = p.window == 0u;
                bool _311;
                if (!_301)
                {
                    _311 = (qpos - kpos) < p.window;
                }
                else
                {
                    _311 = _301;
                }
                _312 = _311;
            }
            else
            {
                _312 = _295;
            }
            if (_312)
            {
                uint kb = (p.ob2 + (key * kstride)) + (kvh * p.d);
                float dd = 0.0;
                for (uint i_2 = 0u; i_2 < p.d; i_2++)
                {
                    dd += (qs[i_2] * _345.kk[kb + i_2]);
                }
                s = dd;
            }
        }
        float param = s;
        float _360 = wg_max(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float cm = _360;
        if (isinf(cm))
        {
            continue;
        }
        float mnew = fast::max(m, cm);
        float alpha = exp(m - mnew);
        if (isinf(s))
        {
            _378 = 0.0;
        }
        else
        {
            _378 = exp(s - mnew);
        }
        float pe = _378;
        pw[t] = pe;
        float param_1 = pe;
        float _396 = wg_sum(param_1, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        l = (l * alpha) + _396;
        uint cnt = min(C, (k1 - base));
        for (uint j_1 = 0u; j_1 < 4u; j_1++)
        {
            uint dim = t + (j_1 * C);
            if (dim < p.d)
            {
                float a = acc[j_1] * alpha;
                uint vb = ((p.ob3 + (base * kstride)) + (kvh * p.d)) + dim;
                for (uint i_3 = 0u; i_3 < cnt; i_3++)
                {
                    a += (pw[i_3] * _460.vv[vb + (i_3 * kstride)]);
                }
                acc[j_1] = a;
            }
        }
        m = mnew;
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (p.kps != 0u)
    {
        uint pb = p.ob6 + (((((r * p.hq) + h) * gl_NumWorkGroups.z) + gl_WorkGroupID.z) * (p.d + 2u));
        if (t == 0u)
        {
            _516.part[pb] = m;
            _516.part[pb + 1u] = l;
        }
        for (uint j_2 = 0u; j_2 < 4u; j_2++)
        {
            uint dim_1 = t + (j_2 * C);
            if (dim_1 < p.d)
            {
                _516.part[(pb + 2u) + dim_1] = acc[j_2];
            }
        }
        return;
    }
    uint ob = p.ob5 + (((r * p.hq) + h) * p.d);
    for (uint j_3 = 0u; j_3 < 4u; j_3++)
    {
        uint dim_2 = t + (j_3 * C);
        if (dim_2 < p.d)
        {
            _592.dst[ob + dim_2] = acc[j_3] / l;
        }
    }
}

