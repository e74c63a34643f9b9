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
    float _49;
    if (dt == 2u)
    {
        _49 = as_type<float>(bits << uint(16));
    }
    else
    {
        _49 = float2(as_type<half2>(bits)).x;
    }
    return _49;
}

static inline __attribute__((always_inline))
float load_w(thread const uint& n, thread const uint& k, constant Params& p, const device W& v_328)
{
    float _322;
    if (p.wdt == 0u)
    {
        _322 = as_type<float>(v_328.w[(p.ob2 + (n * p.n_in)) + k]);
    }
    else
    {
        uint param = (v_328.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
        uint param_1 = p.wdt;
        _322 = cvt16(param, param_1);
    }
    return _322;
}

static inline __attribute__((always_inline))
float ldv(thread const uint& s, thread const uint& i, const device X& v_101, device D& v_111, device B6& v_119, device B7& v_127)
{
    switch (s)
    {
        case 1u:
        {
            return v_101.x[i];
        }
        case 5u:
        {
            return v_111.dst[i];
        }
        case 6u:
        {
            return v_119.b6[i];
        }
        default:
        {
            return v_127.b7[i];
        }
    }
}

static inline __attribute__((always_inline))
float safe_tanh(thread const float& x)
{
    float t = exp((-2.0) * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    float _82;
    if (x < 0.0)
    {
        _82 = -r;
    }
    else
    {
        _82 = r;
    }
    return _82;
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
void stv(thread const uint& s, thread const uint& i, thread const float& v, device D& v_111, device B6& v_119, device B7& v_127)
{
    switch (s)
    {
        case 5u:
        {
            v_111.dst[i] = v;
            break;
        }
        case 6u:
        {
            v_119.b6[i] = v;
            break;
        }
        default:
        {
            v_127.b7[i] = v;
            break;
        }
    }
}

static inline __attribute__((always_inline))
float epi_run(thread float& v, thread const uint& i, const device X& v_101, device D& v_111, device B6& v_119, device B7& v_127, constant Params& p)
{
    float _287;
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
            float param_3 = ldv(param, param_1, v_101, v_111, v_119, v_127);
            float param_4 = v;
            float param_5 = f;
            uint param_6 = slot;
            uint param_7 = j;
            float param_8 = epi_elt(param_2, param_3, param_4, param_5);
            stv(param_6, param_7, param_8, v_111, v_119, v_127);
        }
        else
        {
            if (op <= 1u)
            {
                uint param_9 = slot;
                uint param_10 = e.y + (i % e.z);
                _287 = ldv(param_9, param_10, v_101, v_111, v_119, v_127);
            }
            else
            {
                _287 = 0.0;
            }
            float b = _287;
            uint param_11 = op;
            float param_12 = v;
            float param_13 = b;
            float param_14 = f;
            v = epi_elt(param_11, param_12, param_13, param_14);
        }
    }
    return v;
}

kernel void mmx(constant Params& p [[buffer(0)]], const device X& v_101 [[buffer(1)]], const device W& v_328 [[buffer(2)]], device D& v_111 [[buffer(5)]], device B6& v_119 [[buffer(6)]], device B7& v_127 [[buffer(7)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float xs[16][65];
    threadgroup float ws[16][65];
    uint tid = gl_LocalInvocationID.x;
    uint tx = tid % 16u;
    uint ty = tid / 16u;
    uint n0 = gl_WorkGroupID.x * 64u;
    uint m0 = gl_WorkGroupID.y * 64u;
    spvUnsafeArray<spvUnsafeArray<float, 4>, 4> acc;
    for (uint i = 0u; i < 4u; i++)
    {
        for (uint j = 0u; j < 4u; j++)
        {
            acc[i][j] = 0.0;
        }
    }
    float _483;
    float _520;
    spvUnsafeArray<float, 4> a;
    spvUnsafeArray<float, 4> b;
    for (uint k0 = 0u; k0 < p.n_in; k0 += 16u)
    {
        for (uint e = tid; e < 1024u; e += 256u)
        {
            uint rr = e / 16u;
            uint kk = e % 16u;
            uint m = m0 + rr;
            uint k = k0 + kk;
            bool _475 = m < p.n_rows;
            bool _482;
            if (_475)
            {
                _482 = k < p.n_in;
            }
            else
            {
                _482 = _475;
            }
            if (_482)
            {
                _483 = v_101.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _483 = 0.0;
            }
            xs[kk][rr] = _483;
            uint n = n0 + rr;
            bool _512 = n < p.n_out;
            bool _519;
            if (_512)
            {
                _519 = k < p.n_in;
            }
            else
            {
                _519 = _512;
            }
            if (_519)
            {
                uint param = n;
                uint param_1 = k;
                _520 = load_w(param, param_1, p, v_328);
            }
            else
            {
                _520 = 0.0;
            }
            ws[kk][rr] = _520;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint kk_1 = 0u; kk_1 < 16u; kk_1++)
        {
            for (uint i_1 = 0u; i_1 < 4u; i_1++)
            {
                a[i_1] = xs[kk_1][(ty * 4u) + i_1];
                b[i_1] = ws[kk_1][(tx * 4u) + i_1];
            }
            for (uint i_2 = 0u; i_2 < 4u; i_2++)
            {
                for (uint j_1 = 0u; j_1 < 4u; j_1++)
                {
                    acc[i_2][j_1] += (a[i_2] * b[j_1]);
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i_3 = 0u; i_3 < 4u; i_3++)
    {
        uint m_1 = (m0 + (ty * 4u)) + i_3;
        if (m_1 >= p.n_rows)
        {
            continue;
        }
        for (uint j_2 = 0u; j_2 < 4u; j_2++)
        {
            uint n_1 = (n0 + (tx * 4u)) + j_2;
            if (n_1 < p.n_out)
            {
                float param_2 = acc[i_3][j_2];
                uint param_3 = n_1;
                float _663 = epi_run(param_2, param_3, v_101, v_111, v_119, v_127, p);
                acc[i_3][j_2] = _663;
                v_111.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n_1] = acc[i_3][j_2];
            }
        }
    }
}

