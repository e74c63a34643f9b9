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
    uint n_in;
    uint n_out;
    uint n_rows;
    uint ldd;
    uint out0;
    uint gsize;
    uint sdt;
    uint wdt;
};

struct W
{
    uint w[1];
};

struct S
{
    uint sc[1];
};

struct B
{
    uint bi[1];
};

struct X
{
    float x[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

static inline __attribute__((always_inline))
void put_x(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&xs)[32][17])
{
    ((threadgroup float*)&xs[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _36;
    if (dt == 2u)
    {
        _36 = as_type<float>(bits << uint(16));
    }
    else
    {
        _36 = float2(as_type<half2>(bits)).x;
    }
    return _36;
}

static inline __attribute__((always_inline))
void put_w(thread const uint& kk, thread const uint& rr, thread const float& v, threadgroup float4 (&ws)[32][17])
{
    ((threadgroup float*)&ws[kk][rr >> 2u])[rr & 3u] = v;
}

static inline __attribute__((always_inline))
void stage_w(thread const uint& tid, thread const uint& n0, thread const uint& k0, threadgroup float4 (&ws)[32][17], constant Params& p, const device W& v_141, const device S& v_176, const device B& v_221)
{
    uint words = p.n_in / 8u;
    uint groups = p.n_in / p.gsize;
    float _170;
    float _215;
    for (uint e = tid; e < 256u; e += 256u)
    {
        uint rr = e / 4u;
        uint wq = e % 4u;
        uint n = n0 + rr;
        uint k = k0 + (wq * 8u);
        uint kk = wq * 8u;
        bool _127 = n < p.n_out;
        bool _134;
        if (_127)
        {
            _134 = k < p.n_in;
        }
        else
        {
            _134 = _127;
        }
        if (_134)
        {
            uint word = v_141.w[(p.ob2 + (n * words)) + (k / 8u)];
            uint si = (n * groups) + (k / p.gsize);
            if (p.sdt == 0u)
            {
                _170 = as_type<float>(v_176.sc[p.ob3 + si]);
            }
            else
            {
                uint param = (v_176.sc[(p.ob3 + si) >> uint(1)] >> (((p.ob3 + si) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.sdt;
                _170 = cvt16(param, param_1);
            }
            float s = _170;
            if (p.sdt == 0u)
            {
                _215 = as_type<float>(v_221.bi[p.ob4 + si]);
            }
            else
            {
                uint param_2 = (v_221.bi[(p.ob4 + si) >> uint(1)] >> (((p.ob4 + si) & 1u) << uint(4))) & 65535u;
                uint param_3 = p.sdt;
                _215 = cvt16(param_2, param_3);
            }
            float b = _215;
            for (uint i = 0u; i < 8u; i++)
            {
                uint param_4 = kk + i;
                uint param_5 = rr;
                float param_6 = (s * float((word >> (i * 4u)) & 15u)) + b;
                put_w(param_4, param_5, param_6, ws);
            }
        }
        else
        {
            for (uint i_1 = 0u; i_1 < 8u; i_1++)
            {
                uint param_7 = kk + i_1;
                uint param_8 = rr;
                float param_9 = 0.0;
                put_w(param_7, param_8, param_9, ws);
            }
        }
    }
}

kernel void qmm4(constant Params& p [[buffer(0)]], const device X& _395 [[buffer(1)]], const device W& v_141 [[buffer(2)]], const device S& v_176 [[buffer(3)]], const device B& v_221 [[buffer(4)]], device D& _532 [[buffer(5)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
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
    float _389;
    for (uint k0 = 0u; k0 < p.n_in; k0 += 32u)
    {
        for (uint e = tid; e < 2048u; e += 256u)
        {
            uint rr = e / 32u;
            uint kk = e % 32u;
            uint m = m0 + rr;
            uint k = k0 + kk;
            bool _381 = m < p.n_rows;
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
                _389 = _395.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _389 = 0.0;
            }
            uint param = kk;
            uint param_1 = rr;
            float param_2 = _389;
            put_x(param, param_1, param_2, xs);
        }
        uint param_3 = tid;
        uint param_4 = n0;
        uint param_5 = k0;
        stage_w(param_3, param_4, param_5, ws, p, v_141, v_176, v_221);
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
                _532.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n] = v;
            }
        }
    }
}

