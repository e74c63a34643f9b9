#pragma clang diagnostic ignored "-Wmissing-prototypes"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

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

struct B4
{
    float b4[1];
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
    uint nb;
    uint op;
    float f;
    uint nepi;
    uint pad0;
    uint pad1;
    uint pad2;
    uint4 epi[6];
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
    float _57;
    if (x < 0.0)
    {
        _57 = -r;
    }
    else
    {
        _57 = r;
    }
    return _57;
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device A& v_102, const device Bv& v_113, device D& v_121, device B4& v_129, device B5& v_137, device B6& v_145, device B7& v_153)
{
    switch (s)
    {
        case 1u:
        {
            return v_102.a[i];
        }
        case 2u:
        {
            return v_113.b[i];
        }
        case 3u:
        {
            return v_121.dst[i];
        }
        case 4u:
        {
            return v_129.b4[i];
        }
        case 5u:
        {
            return v_137.b5[i];
        }
        case 6u:
        {
            return v_145.b6[i];
        }
        default:
        {
            return v_153.b7[i];
        }
    }
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
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_121, device B4& v_129, device B5& v_137, device B6& v_145, device B7& v_153)
{
    switch (s)
    {
        case 3u:
        {
            v_121.dst[i] = v;
            break;
        }
        case 4u:
        {
            v_129.b4[i] = v;
            break;
        }
        case 5u:
        {
            v_137.b5[i] = v;
            break;
        }
        case 6u:
        {
            v_145.b6[i] = v;
            break;
        }
        default:
        {
            v_153.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device A& v_102, const device Bv& v_113, device D& v_121, device B4& v_129, device B5& v_137, device B6& v_145, device B7& v_153, constant Params& p)
{
    float _323;
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
            float param_3 = ldv(param, param_1, v_102, v_113, v_121, v_129, v_137, v_145, v_153);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_121, v_129, v_137, v_145, v_153);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _323 = ldv(param_9, param_10, v_102, v_113, v_121, v_129, v_137, v_145, v_153);
            }
            else
            {
                _323 = 0.0;
            }
            float b = _323;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

kernel void eltx(constant Params& p [[buffer(0)]], const device A& v_102 [[buffer(1)]], const device Bv& v_113 [[buffer(2)]], device D& v_121 [[buffer(3)]], device B4& v_129 [[buffer(4)]], device B5& v_137 [[buffer(5)]], device B6& v_145 [[buffer(6)]], device B7& v_153 [[buffer(7)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint i = linear_id(gl_WorkGroupID, gl_NumWorkGroups, gl_LocalInvocationID);
    if (i >= p.n)
    {
        return;
    }
    float x = v_102.a[p.ob1 + i];
    float y;
    switch (p.op)
    {
        case 0u:
        {
            y = x + v_113.b[p.ob2 + (i % p.nb)];
            break;
        }
        case 1u:
        {
            y = x * v_113.b[p.ob2 + (i % p.nb)];
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
    float param_2 = y;
    uint param_3 = i;
    float _456 = epi_run(param_2, param_3, v_102, v_113, v_121, v_129, v_137, v_145, v_153, p);
    y = _456;
    v_121.dst[p.ob3 + i] = y;
}

