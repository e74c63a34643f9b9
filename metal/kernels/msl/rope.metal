#pragma clang diagnostic ignored "-Wmissing-prototypes"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T>
[[clang::optnone]] T spvFMul(T l, T r)
{
    return fma(l, r, T(0));
}

template<typename T, int Cols, int Rows>
[[clang::optnone]] vec<T, Cols> spvFMulVectorMatrix(vec<T, Rows> v, matrix<T, Cols, Rows> m)
{
    vec<T, Cols> res = vec<T, Cols>(0);
    for (uint i = Rows; i > 0; --i)
    {
        vec<T, Cols> tmp(0);
        for (uint j = 0; j < Cols; ++j)
        {
            tmp[j] = m[j][i - 1];
        }
        res = fma(tmp, vec<T, Cols>(v[i - 1]), res);
    }
    return res;
}

template<typename T, int Cols, int Rows>
[[clang::optnone]] vec<T, Rows> spvFMulMatrixVector(matrix<T, Cols, Rows> m, vec<T, Cols> v)
{
    vec<T, Rows> res = vec<T, Rows>(0);
    for (uint i = Cols; i > 0; --i)
    {
        res = fma(m[i - 1], vec<T, Rows>(v[i - 1]), res);
    }
    return res;
}

template<typename T, int LCols, int LRows, int RCols, int RRows>
[[clang::optnone]] matrix<T, RCols, LRows> spvFMulMatrixMatrix(matrix<T, LCols, LRows> l, matrix<T, RCols, RRows> r)
{
    matrix<T, RCols, LRows> res;
    for (uint i = 0; i < RCols; i++)
    {
        vec<T, RCols> tmp(0);
        for (uint j = 0; j < LCols; j++)
        {
            tmp = fma(vec<T, RCols>(r[i][j]), l[j], tmp);
        }
        res[i] = tmp;
    }
    return res;
}

template<typename T>
[[clang::optnone]] T spvFAdd(T l, T r)
{
    return fma(T(1), l, r);
}

template<typename T>
[[clang::optnone]] T spvFSub(T l, T r)
{
    return fma(T(-1), r, l);
}

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
    uint rows;
    uint heads;
    uint head_dim;
    uint half_dims;
    uint pos0;
    uint interleaved;
};

struct F
{
    float invf[1];
};

struct X
{
    float x[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
uint linear_id(thread uint3& gl_WorkGroupID, thread uint3& gl_NumWorkGroups, thread uint3& gl_LocalInvocationID)
{
    return (((gl_WorkGroupID.y * gl_NumWorkGroups.x) + gl_WorkGroupID.x) * 64u) + gl_LocalInvocationID.x;
}

kernel void rope(constant Params& p [[buffer(0)]], device X& _167 [[buffer(1)]], const device F& _87 [[buffer(2)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint id = linear_id(gl_WorkGroupID, gl_NumWorkGroups, gl_LocalInvocationID);
    uint total = (p.rows * p.heads) * p.half_dims;
    if (id >= total)
    {
        return;
    }
    uint i = id % p.half_dims;
    uint rh = id / p.half_dims;
    uint row = rh / p.heads;
    float theta = spvFMul(float(p.pos0 + row), _87.invf[p.ob2 + i]);
    float k = floor(spvFAdd(spvFMul(theta, 0.15915493667125701904296875), 0.5));
    float r = spvFSub(theta, spvFMul(k, 6.25));
    r = spvFSub(r, spvFMul(k, 0.033203125));
    r = spvFSub(r, spvFMul(k, -1.7817819752963259816169738769531e-05));
    float c = cos(r);
    float s = sin(r);
    uint b1 = (p.ob1 + (rh * p.head_dim)) + i;
    uint b2 = b1 + p.half_dims;
    if (p.interleaved != 0u)
    {
        b1 = (p.ob1 + (rh * p.head_dim)) + (2u * i);
        b2 = b1 + 1u;
    }
    float x1 = _167.x[b1];
    float x2 = _167.x[b2];
    _167.x[b1] = (x1 * c) - (x2 * s);
    _167.x[b2] = (x2 * c) + (x1 * s);
}

