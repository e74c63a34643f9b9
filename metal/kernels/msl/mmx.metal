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
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _66;
    if (dt == 2u)
    {
        _66 = as_type<float>(bits << uint(16));
    }
    else
    {
        _66 = float2(as_type<half2>(bits)).x;
    }
    return _66;
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device X& v_118, device D& v_128, device B6& v_136, device B7& v_144)
{
    switch (s)
    {
        case 1u:
        {
            return v_118.x[i];
        }
        case 5u:
        {
            return v_128.dst[i];
        }
        case 6u:
        {
            return v_136.b6[i];
        }
        default:
        {
            return v_144.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _99;
    if (x < 0.0)
    {
        _99 = -r;
    }
    else
    {
        _99 = r;
    }
    return _99;
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
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_128, device B6& v_136, device B7& v_144)
{
    switch (s)
    {
        case 5u:
        {
            v_128.dst[i] = v;
            break;
        }
        case 6u:
        {
            v_136.b6[i] = v;
            break;
        }
        default:
        {
            v_144.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device X& v_118, device D& v_128, device B6& v_136, device B7& v_144, constant Params& p)
{
    float _304;
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
            float param_3 = ldv(param, param_1, v_118, v_128, v_136, v_144);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_128, v_136, v_144);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _304 = ldv(param_9, param_10, v_118, v_128, v_136, v_144);
            }
            else
            {
                _304 = 0.0;
            }
            float b = _304;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

static inline __attribute__((always_inline))
void few_rows(thread const uint& n0, thread const uint& m0, thread const uint& rows, const device X& v_118, device D& v_128, device B6& v_136, device B7& v_144, constant Params& p, const device W& v_407, thread uint& gl_SubgroupID, thread uint& gl_SubgroupInvocationID, thread uint& gl_SubgroupSize, thread uint& gl_NumSubgroups)
{
    uint n1 = min((n0 + 64u), p.n_out);
    uint _479 = n0 + gl_SubgroupID;
    float _528;
    for (uint n = _479; n < n1; n += gl_NumSubgroups)
    {
        for (uint i = 0u; i < rows; i++)
        {
            uint m = m0 + i;
            float d = 0.0;
            for (uint k = gl_SubgroupInvocationID; k < p.n_in; k += gl_SubgroupSize)
            {
                if (p.wdt == 0u)
                {
                    _528 = as_type<float>(v_407.w[(p.ob2 + (n * p.n_in)) + k]);
                }
                else
                {
                    uint param = (v_407.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
                    uint param_1 = p.wdt;
                    _528 = cvt16(param, param_1);
                }
                d += (v_118.x[(p.ob1 + (m * p.n_in)) + k] * _528);
            }
            float v = simd_sum(d);
            bool _585 = simd_is_first();
            if (_585)
            {
                float param_2 = v;
                uint param_3 = n;
                float _592 = epi_run(param_2, param_3, v_118, v_128, v_136, v_144, p);
                v = _592;
                v_128.dst[((p.ob5 + (m * p.ldd)) + p.out0) + n] = v;
            }
        }
    }
}

static inline __attribute__((always_inline))
void put_x(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&xs)[32][17])
{
    ((threadgroup float*)&xs[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
void put_w(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&ws)[32][17])
{
    ((threadgroup float*)&ws[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
void stage_w(thread const uint& tid, thread const uint& n0, thread const uint& k0, constant Params& p, threadgroup float4 (&ws)[32][17], const device W& v_407)
{
    float _394;
    float _401;
    for (uint e = tid; e < 2048u; e += 256u)
    {
        uint rr = e / 32u;
        uint kk = e % 32u;
        uint n = n0 + rr;
        uint k = k0 + kk;
        bool _386 = n < p.n_out;
        bool _393;
        if (_386)
        {
            _393 = k < p.n_in;
        }
        else
        {
            _393 = _386;
        }
        if (_393)
        {
            if (p.wdt == 0u)
            {
                _401 = as_type<float>(v_407.w[(p.ob2 + (n * p.n_in)) + k]);
            }
            else
            {
                uint param = (v_407.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.wdt;
                _401 = cvt16(param, param_1);
            }
            _394 = _401;
        }
        else
        {
            _394 = 0.0;
        }
        uint param_2 = kk;
        uint param_3 = rr;
        float param_4 = _394;
        put_w(param_2, param_3, param_4, ws);
    }
}

kernel void mmx(constant Params& p [[buffer(0)]], const device X& v_118 [[buffer(1)]], const device W& v_407 [[buffer(2)]], device D& v_128 [[buffer(5)]], device B6& v_136 [[buffer(6)]], device B7& v_144 [[buffer(7)]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_SubgroupInvocationID [[thread_index_in_simdgroup]], uint gl_SubgroupSize [[thread_execution_width]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float4 xs[32][17];
    threadgroup float4 ws[32][17];
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % 16u;
    uint ty = tid / 16u;
    uint n0 = gl_WorkGroupID.x * 64u;
    uint m0 = gl_WorkGroupID.y * 64u;
    if ((p.n_rows - m0) <= 4u)
    {
        uint param = n0;
        uint param_1 = m0;
        uint param_2 = p.n_rows - m0;
        few_rows(param, param_1, param_2, v_118, v_128, v_136, v_144, p, v_407, gl_SubgroupID, gl_SubgroupInvocationID, gl_SubgroupSize, gl_NumSubgroups);
        return;
    }
    spvUnsafeArray<float4, 4> acc;
    for (uint i = 0u; i < 4u; i++)
    {
        acc[i] = float4(0.0);
    }
    float _718;
    for (uint k0 = 0u; k0 < p.n_in; k0 += 32u)
    {
        for (uint e = tid; e < 2048u; e += 256u)
        {
            uint rr = e / 32u;
            uint kk = e % 32u;
            uint m = m0 + rr;
            uint k = k0 + kk;
            bool _710 = m < p.n_rows;
            bool _717;
            if (_710)
            {
                _717 = k < p.n_in;
            }
            else
            {
                _717 = _710;
            }
            if (_717)
            {
                _718 = v_118.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _718 = 0.0;
            }
            uint param_3 = kk;
            uint param_4 = rr;
            float param_5 = _718;
            put_x(param_3, param_4, param_5, xs);
        }
        uint param_6 = tid;
        uint param_7 = n0;
        uint param_8 = k0;
        stage_w(param_6, param_7, param_8, p, ws, v_407);
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
                float param_9 = v;
                uint param_10 = n;
                float _858 = epi_run(param_9, param_10, v_118, v_128, v_136, v_144, p);
                v = _858;
                v_128.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n] = v;
            }
        }
    }
}

