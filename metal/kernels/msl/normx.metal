#pragma clang diagnostic ignored "-Wmissing-prototypes"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

struct X
{
    float x[1];
};

struct D
{
    float dst[1];
};

struct B5
{
    float b5[1];
};

struct B6
{
    float b6[1];
};

struct B7
{
    float b7[1];
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
    uint n;
    uint rows;
    uint has_w;
    uint wdt;
    float eps;
    uint center;
    uint has_b;
    uint bdt;
    uint nepi;
    uint norm2;
    uint w2dt;
    float eps2;
    float s2;
    uint d2;
    uint d2off;
    uint pad0;
    uint4 epi[6];
};

struct Wt
{
    uint wt[1];
};

struct Bs
{
    uint bs[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(512u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_group(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups)
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x;
}

static inline __attribute__((always_inline))
float wg_sum(thread const float& v, threadgroup float (&red_scratch)[512], thread uint& gl_SubgroupID, thread uint& gl_NumSubgroups)
{
    float s = simd_sum(v);
    bool _114 = simd_is_first();
    if (_114)
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

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _51;
    if (dt == 2u)
    {
        _51 = as_type<float>(bits << uint(16));
    }
    else
    {
        _51 = float2(as_type<half2>(bits)).x;
    }
    return _51;
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device X& v_159, device D& v_169, device B5& v_177, device B6& v_185, device B7& v_193)
{
    switch (s)
    {
        case 1u:
        {
            return v_159.x[i];
        }
        case 3u:
        {
            return v_169.dst[i];
        }
        case 5u:
        {
            return v_177.b5[i];
        }
        case 6u:
        {
            return v_185.b6[i];
        }
        default:
        {
            return v_193.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _84;
    if (x < 0.0)
    {
        _84 = -r;
    }
    else
    {
        _84 = r;
    }
    return _84;
}

static inline __attribute__((always_inline))
float epi_elt(thread const uint& op, thread const float& x, thread const float& y, thread const float& f)
{
    switch (op)
    {
        case 0u:
        {
            return x + y;
        }
        case 1u:
        {
            return x * y;
        }
        case 2u:
        {
            return x * f;
        }
        case 3u:
        {
            float param = x / f;
            return safe_tanh(param) * f;
        }
        case 4u:
        {
            float param_1 = 0.79788458347320556640625 * (x + (((0.0447149984538555145263671875 * x) * x) * x));
            return (0.5 * x) * (1.0 + safe_tanh(param_1));
        }
        case 6u:
        {
            return x / (1.0 + exp(-x));
        }
    }
    return x;
}

static inline __attribute__((always_inline))
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_169, device B5& v_177, device B6& v_185, device B7& v_193)
{
    switch (s)
    {
        case 3u:
        {
            v_169.dst[i] = v;
            break;
        }
        case 5u:
        {
            v_177.b5[i] = v;
            break;
        }
        case 6u:
        {
            v_185.b6[i] = v;
            break;
        }
        default:
        {
            v_193.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device X& v_159, device D& v_169, device B5& v_177, device B6& v_185, device B7& v_193, constant Params& p)
{
    float _356;
    for (uint k = 0u; k < p.nepi; k++)
    {
        uint4 e = p.epi[k];
        uint op = e.x & 255u;
        uint slot = (e.x >> uint(8)) & 15u;
        float f = as_type<float>(e.w);
        if ((e.x & 65536u) != 0u)
        {
            uint j = e.y + i;
            uint param = slot;
            uint param_1 = j;
            uint param_2 = op;
            float param_3 = ldv(param, param_1, v_159, v_169, v_177, v_185, v_193);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_169, v_177, v_185, v_193);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _356 = ldv(param_9, param_10, v_159, v_169, v_177, v_185, v_193);
            }
            else
            {
                _356 = 0.0;
            }
            float b = _356;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

kernel void normx(constant Params& p [[buffer(0)]], const device X& v_159 [[buffer(1)]], const device Wt& _544 [[buffer(2)]], device D& v_169 [[buffer(3)]], const device Bs& _596 [[buffer(4)]], device B5& v_177 [[buffer(5)]], device B6& v_185 [[buffer(6)]], device B7& v_193 [[buffer(7)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red_scratch[512];
    uint row = linear_group(gl_WorkGroupID, gl_NumWorkGroups);
    if (row >= p.rows)
    {
        return;
    }
    uint base = row * p.n;
    uint L = 512u;
    float shift = 0.0;
    float mean = 0.0;
    if (p.center != 0u)
    {
        shift = v_159.x[p.ob1 + base];
        float sum = 0.0;
        for (uint i = gl_LocalInvocationID.x; i < p.n; i += L)
        {
            sum += (v_159.x[(p.ob1 + base) + i] - shift);
        }
        float param = sum;
        float _447 = wg_sum(param, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        mean = _447 / float(p.n);
    }
    float ss = 0.0;
    for (uint i_1 = gl_LocalInvocationID.x; i_1 < p.n; i_1 += L)
    {
        float v = (v_159.x[(p.ob1 + base) + i_1] - shift) - mean;
        ss += (v * v);
    }
    float param_1 = ss;
    float _489 = wg_sum(param_1, red_scratch, gl_SubgroupID, gl_NumSubgroups);
    float inv = rsqrt((_489 / float(p.n)) + p.eps);
    float ss2 = 0.0;
    float _538;
    float _590;
    for (uint i_2 = gl_LocalInvocationID.x; i_2 < p.n; i_2 += L)
    {
        float v_1 = ((v_159.x[(p.ob1 + base) + i_2] - shift) - mean) * inv;
        if (p.has_w != 0u)
        {
            if (p.wdt == 0u)
            {
                _538 = as_type<float>(_544.wt[p.ob2 + i_2]);
            }
            else
            {
                uint param_2 = (_544.wt[(p.ob2 + i_2) >> uint(1)] >> (((p.ob2 + i_2) & 1u) << uint(4))) & 65535u;
                uint param_3 = p.wdt;
                _538 = cvt16(param_2, param_3);
            }
            v_1 *= _538;
        }
        if (p.has_b != 0u)
        {
            if (p.bdt == 0u)
            {
                _590 = as_type<float>(_596.bs[p.ob4 + i_2]);
            }
            else
            {
                uint param_4 = (_596.bs[(p.ob4 + i_2) >> uint(1)] >> (((p.ob4 + i_2) & 1u) << uint(4))) & 65535u;
                uint param_5 = p.bdt;
                _590 = cvt16(param_4, param_5);
            }
            v_1 += _590;
        }
        float param_6 = v_1;
        uint param_7 = base + i_2;
        float _634 = epi_run(param_6, param_7, v_159, v_169, v_177, v_185, v_193, p);
        v_1 = _634;
        v_169.dst[(p.ob3 + base) + i_2] = v_1;
        ss2 += (v_1 * v_1);
    }
    if ((p.norm2 & 1u) != 0u)
    {
        float param_8 = ss2;
        float _662 = wg_sum(param_8, red_scratch, gl_SubgroupID, gl_NumSubgroups);
        float inv2 = rsqrt((_662 / float(p.n)) + p.eps2);
        float _705;
        for (uint i_3 = gl_LocalInvocationID.x; i_3 < p.n; i_3 += L)
        {
            float v_2 = v_169.dst[(p.ob3 + base) + i_3] * inv2;
            if ((p.norm2 & 2u) != 0u)
            {
                if (p.w2dt == 0u)
                {
                    _705 = as_type<float>(_596.bs[p.ob4 + i_3]);
                }
                else
                {
                    uint param_9 = (_596.bs[(p.ob4 + i_3) >> uint(1)] >> (((p.ob4 + i_3) & 1u) << uint(4))) & 65535u;
                    uint param_10 = p.w2dt;
                    _705 = cvt16(param_9, param_10);
                }
                v_2 *= _705;
            }
            uint param_11 = p.d2;
            uint param_12 = (p.d2off + base) + i_3;
            float param_13 = v_2 * p.s2;
            stv(param_11, param_12, param_13, v_169, v_177, v_185, v_193);
        }
    }
}

