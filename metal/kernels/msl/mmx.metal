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

struct X
{
    float x[1];
};

struct D
{
    float dst[1];
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
    uint n_in;
    uint n_out;
    uint n_rows;
    uint ldd;
    uint out0;
    uint gsize;
    uint sdt;
    uint wdt;
    uint nepi;
    uint pad0;
    uint pad1;
    uint pad2;
    uint4 epi[4];
};

struct W
{
    uint w[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

struct S
{
    uint sc[1];
};

struct B
{
    uint bi[1];
};

static inline __attribute__((always_inline))
void put_x(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&xs)[32][17])
{
    ((threadgroup float*)&xs[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _61;
    if (dt == 2u)
    {
        _61 = as_type<float>(bits << uint(16));
    }
    else
    {
        _61 = float2(as_type<half2>(bits)).x;
    }
    return _61;
}

static inline __attribute__((always_inline))
void put_w(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&ws)[32][17])
{
    ((threadgroup float*)&ws[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
void stage_w(thread const uint& tid, thread const uint& n0, thread const uint& k0, constant Params& p, threadgroup float4 (&ws)[32][17], const device W& v_402)
{
    float _389;
    float _396;
    for (uint e = tid; e < 2048u; e += 256u)
    {
        uint rr = e / 32u;
        uint kk = e % 32u;
        uint n = n0 + rr;
        uint k = k0 + kk;
        bool _381 = n < p.n_out;
        bool _388;
        if (_381)
        {
            _388 = k < p.n_in;
        }
        else
        {
            _388 = _381;
        }
        if (_388)
        {
            if (p.wdt == 0u)
            {
                _396 = as_type<float>(v_402.w[(p.ob2 + (n * p.n_in)) + k]);
            }
            else
            {
                uint param = (v_402.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.wdt;
                _396 = cvt16(param, param_1);
            }
            _389 = _396;
        }
        else
        {
            _389 = 0.0;
        }
        uint param_2 = kk;
        uint param_3 = rr;
        float param_4 = _389;
        put_w(param_2, param_3, param_4, ws);
    }
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device X& v_113, device D& v_123, device B6& v_131, device B7& v_139)
{
    switch (s)
    {
        case 1u:
        {
            return v_113.x[i];
        }
        case 5u:
        {
            return v_123.dst[i];
        }
        case 6u:
        {
            return v_131.b6[i];
        }
        default:
        {
            return v_139.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _94;
    if (x < 0.0)
    {
        _94 = -r;
    }
    else
    {
        _94 = r;
    }
    return _94;
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
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_123, device B6& v_131, device B7& v_139)
{
    switch (s)
    {
        case 5u:
        {
            v_123.dst[i] = v;
            break;
        }
        case 6u:
        {
            v_131.b6[i] = v;
            break;
        }
        default:
        {
            v_139.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device X& v_113, device D& v_123, device B6& v_131, device B7& v_139, constant Params& p)
{
    float _299;
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
            float param_3 = ldv(param, param_1, v_113, v_123, v_131, v_139);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_123, v_131, v_139);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _299 = ldv(param_9, param_10, v_113, v_123, v_131, v_139);
            }
            else
            {
                _299 = 0.0;
            }
            float b = _299;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

kernel void mmx(constant Params& p [[buffer(0)]], const device X& v_113 [[buffer(1)]], const device W& v_402 [[buffer(2)]], device D& v_123 [[buffer(5)]], device B6& v_131 [[buffer(6)]], device B7& v_139 [[buffer(7)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float4 xs[32][17];
    threadgroup float4 ws[32][17];
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % 16u;
    uint ty = tid / 16u;
    uint n0 = gl_WorkGroupID.x * 64u;
    uint m0 = gl_WorkGroupID.y * 64u;
    spvUnsafeArray<float4, 4> acc;
    for (uint i = 0u; i < 4u; i++)
    {
        acc[i] = float4(0.0);
    }
    float _548;
    for (uint k0 = 0u; k0 < p.n_in; k0 += 32u)
    {
        for (uint e = tid; e < 2048u; e += 256u)
        {
            uint rr = e / 32u;
            uint kk = e % 32u;
            uint m = m0 + rr;
            uint k = k0 + kk;
            bool _540 = m < p.n_rows;
            bool _547;
            if (_540)
            {
                _547 = k < p.n_in;
            }
            else
            {
                _547 = _540;
            }
            if (_547)
            {
                _548 = v_113.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _548 = 0.0;
            }
            uint param = kk;
            uint param_1 = rr;
            float param_2 = _548;
            put_x(param, param_1, param_2, xs);
        }
        uint param_3 = tid;
        uint param_4 = n0;
        uint param_5 = k0;
        stage_w(param_3, param_4, param_5, p, ws, v_402);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint kk_1 = 0u; kk_1 < 32u; kk_1++)
        {
            float4 a = xs[kk_1][ty];
            float4 b = ws[kk_1][tx];
            acc[0] += (b * a.x);
            acc[1] += (b * a.y);
            acc[2] += (b * a.z);
            acc[3] += (b * a.w);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i_1 = 0u; i_1 < 4u; i_1++)
    {
        uint m_1 = (m0 + (ty * 4u)) + i_1;
        if (m_1 >= p.n_rows)
        {
            continue;
        }
        for (uint j = 0u; j < 4u; j++)
        {
            uint n = (n0 + (tx * 4u)) + j;
            if (n < p.n_out)
            {
                float v = acc[i_1][j];
                float param_6 = v;
                uint param_7 = n;
                float _688 = epi_run(param_6, param_7, v_113, v_123, v_131, v_139, p);
                v = _688;
                v_123.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n] = v;
            }
        }
    }
}

