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
    uint n_in;
    uint n_ids;
    uint bits;
    uint gsize;
    uint sdt;
    uint wdt;
};

struct I
{
    uint ids[1];
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

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
float cvt16(thread const uint& bits, thread const uint& dt)
{
    float _19;
    if (dt == 2u)
    {
        _19 = as_type<float>(bits << uint(16));
    }
    else
    {
        _19 = float2(as_type<half2>(bits)).x;
    }
    return _19;
}

kernel void gather(constant Params& p [[buffer(0)]], const device I& _73 [[buffer(1)]], const device W& _100 [[buffer(2)]], const device S& _209 [[buffer(3)]], const device B& _251 [[buffer(4)]], device D& _285 [[buffer(5)]], uint3 gl_GlobalInvocationID [[thread_position_in_grid]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    uint k = gl_GlobalInvocationID.x;
    uint i = gl_WorkGroupID.y;
    bool _56 = k >= p.n_in;
    bool _65;
    if (!_56)
    {
        _65 = i >= p.n_ids;
    }
    else
    {
        _65 = _56;
    }
    if (_65)
    {
        return;
    }
    uint row = _73.ids[p.ob1 + i];
    float v;
    if (p.bits == 0u)
    {
        float _94;
        if (p.wdt == 0u)
        {
            _94 = as_type<float>(_100.w[(p.ob2 + (row * p.n_in)) + k]);
        }
        else
        {
            uint param = (_100.w[((p.ob2 + (row * p.n_in)) + k) >> uint(1)] >> ((((p.ob2 + (row * p.n_in)) + k) & 1u) << uint(4))) & 65535u;
            uint param_1 = p.wdt;
            _94 = cvt16(param, param_1);
        }
        v = _94;
    }
    else
    {
        uint per = 32u / p.bits;
        uint word = _100.w[(p.ob2 + (row * (p.n_in / per))) + (k / per)];
        float q = float((word >> ((k % per) * p.bits)) & ((1u << p.bits) - 1u));
        uint si = (row * (p.n_in / p.gsize)) + (k / p.gsize);
        float _203;
        if (p.sdt == 0u)
        {
            _203 = as_type<float>(_209.sc[p.ob3 + si]);
        }
        else
        {
            uint param_2 = (_209.sc[(p.ob3 + si) >> uint(1)] >> (((p.ob3 + si) & 1u) << uint(4))) & 65535u;
            uint param_3 = p.sdt;
            _203 = cvt16(param_2, param_3);
        }
        float _245;
        if (p.sdt == 0u)
        {
            _245 = as_type<float>(_251.bi[p.ob4 + si]);
        }
        else
        {
            uint param_4 = (_251.bi[(p.ob4 + si) >> uint(1)] >> (((p.ob4 + si) & 1u) << uint(4))) & 65535u;
            uint param_5 = p.sdt;
            _245 = cvt16(param_4, param_5);
        }
        v = (_203 * q) + _245;
    }
    _285.dst[(p.ob5 + (i * p.n_in)) + k] = v;
}

