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

struct X
{
    float x[1];
};

struct D
{
    float dst[1];
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
    float _23;
    if (dt == 2u)
    {
        _23 = as_type<float>(bits << uint(16));
    }
    else
    {
        _23 = float2(as_type<half2>(bits)).x;
    }
    return _23;
}

static inline __attribute__((always_inline))
float load_w(thread const uint& n, thread const uint& k, constant Params& p, const device W& v_54)
{
    float _48;
    if (p.wdt == 0u)
    {
        _48 = as_type<float>(v_54.w[(p.ob2 + (n * p.n_in)) + k]);
    }
    else
    {
        uint param = (v_54.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
        uint param_1 = p.wdt;
        _48 = cvt16(param, param_1);
    }
    return _48;
}

kernel void mm(constant Params& p [[buffer(0)]], const device X& _221 [[buffer(1)]], const device W& v_54 [[buffer(2)]], device D& _394 [[buffer(5)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
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
    float _215;
    float _257;
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
            bool _207 = m < p.n_rows;
            bool _214;
            if (_207)
            {
                _214 = k < p.n_in;
            }
            else
            {
                _214 = _207;
            }
            if (_214)
            {
                _215 = _221.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _215 = 0.0;
            }
            xs[kk][rr] = _215;
            uint n = n0 + rr;
            bool _249 = n < p.n_out;
            bool _256;
            if (_249)
            {
                _256 = k < p.n_in;
            }
            else
            {
                _256 = _249;
            }
            if (_256)
            {
                uint param = n;
                uint param_1 = k;
                _257 = load_w(param, param_1, p, v_54);
            }
            else
            {
                _257 = 0.0;
            }
            ws[kk][rr] = _257;
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
                _394.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n_1] = acc[i_3][j_2];
            }
        }
    }
}

