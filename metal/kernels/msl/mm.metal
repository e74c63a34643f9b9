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
    float _41;
    if (dt == 2u)
    {
        _41 = as_type<float>(bits << uint(16));
    }
    else
    {
        _41 = float2(as_type<half2>(bits)).x;
    }
    return _41;
}

static inline __attribute__((always_inline))
void few_rows(thread const uint& n0, thread const uint& m0, thread const uint& rows, constant Params& p, const device W& v_136, thread uint& gl_SubgroupID, thread uint& gl_SubgroupInvocationID, const device X& v_250, thread uint& gl_SubgroupSize, device D& v_329, thread uint& gl_NumSubgroups)
{
    uint n1 = min((n0 + 64u), p.n_out);
    uint _212 = n0 + gl_SubgroupID;
    float _266;
    for (uint n = _212; n < n1; n += gl_NumSubgroups)
    {
        for (uint i = 0u; i < rows; i++)
        {
            uint m = m0 + i;
            float d = 0.0;
            for (uint k = gl_SubgroupInvocationID; k < p.n_in; k += gl_SubgroupSize)
            {
                if (p.wdt == 0u)
                {
                    _266 = as_type<float>(v_136.w[(p.ob2 + (n * p.n_in)) + k]);
                }
                else
                {
                    uint param = (v_136.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
                    uint param_1 = p.wdt;
                    _266 = cvt16(param, param_1);
                }
                d += (v_250.x[(p.ob1 + (m * p.n_in)) + k] * _266);
            }
            float v = simd_sum(d);
            bool _323 = simd_is_first();
            if (_323)
            {
                v_329.dst[((p.ob5 + (m * p.ldd)) + p.out0) + n] = v;
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
void stage_w(thread const uint& tid, thread const uint& n0, thread const uint& k0, threadgroup float4 (&ws)[32][17], constant Params& p, const device W& v_136)
{
    float _123;
    float _130;
    for (uint e = tid; e < 2048u; e += 256u)
    {
        uint rr = e / 32u;
        uint kk = e % 32u;
        uint n = n0 + rr;
        uint k = k0 + kk;
        bool _114 = n < p.n_out;
        bool _122;
        if (_114)
        {
            _122 = k < p.n_in;
        }
        else
        {
            _122 = _114;
        }
        if (_122)
        {
            if (p.wdt == 0u)
            {
                _130 = as_type<float>(v_136.w[(p.ob2 + (n * p.n_in)) + k]);
            }
            else
            {
                uint param = (v_136.w[((p.ob2 + (n * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (n * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
                uint param_1 = p.wdt;
                _130 = cvt16(param, param_1);
            }
            _123 = _130;
        }
        else
        {
            _123 = 0.0;
        }
        uint param_2 = kk;
        uint param_3 = rr;
        float param_4 = _123;
        put_w(param_2, param_3, param_4, ws);
    }
}

kernel void mm(constant Params& p [[buffer(0)]], const device X& v_250 [[buffer(1)]], const device W& v_136 [[buffer(2)]], device D& v_329 [[buffer(5)]], uint gl_SubgroupID [[simdgroup_index_in_threadgroup]], uint gl_SubgroupInvocationID [[thread_index_in_simdgroup]], uint gl_SubgroupSize [[thread_execution_width]], uint gl_NumSubgroups [[simdgroups_per_threadgroup]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
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
        few_rows(param, param_1, param_2, p, v_136, gl_SubgroupID, gl_SubgroupInvocationID, v_250, gl_SubgroupSize, v_329, gl_NumSubgroups);
        return;
    }
    spvUnsafeArray<float4, 4> acc;
    for (uint i = 0u; i < 4u; i++)
    {
        acc[i] = float4(0.0);
    }
    float _456;
    for (uint k0 = 0u; k0 < p.n_in; k0 += 32u)
    {
        for (uint e = tid; e < 2048u; e += 256u)
        {
            uint rr = e / 32u;
            uint kk = e % 32u;
            uint m = m0 + rr;
            uint k = k0 + kk;
            bool _448 = m < p.n_rows;
            bool _455;
            if (_448)
            {
                _455 = k < p.n_in;
            }
            else
            {
                _455 = _448;
            }
            if (_455)
            {
                _456 = v_250.x[(p.ob1 + (m * p.n_in)) + k];
            }
            else
            {
                _456 = 0.0;
            }
            uint param_3 = kk;
            uint param_4 = rr;
            float param_5 = _456;
            put_x(param_3, param_4, param_5, xs);
        }
        uint param_6 = tid;
        uint param_7 = n0;
        uint param_8 = k0;
        stage_w(param_6, param_7, param_8, ws, p, v_136);
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
                v_329.dst[((p.ob5 + (m_1 * p.ldd)) + p.out0) + n] = v;
            }
        }
    }
}

