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
    uint nq;
    uint nk;
    uint hq;
    uint hkv;
    uint d;
    uint qpos0;
    uint window;
    uint nspans;
    float scale;
    uint kps;
};

struct Q
{
    float q[1];
};

struct Sp
{
    uint spans[1];
};

struct K
{
    float kk[1];
};

struct V
{
    float vv[1];
};

struct P
{
    float part[1];
};

struct D
{
    float dst[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

kernel void attnd(constant Params& p [[buffer(0)]], const device Q& _85 [[buffer(1)]], const device K& _345 [[buffer(2)]], const device V& _771 [[buffer(3)]], const device Sp& _241 [[buffer(4)]], device D& _999 [[buffer(5)]], device P& _932 [[buffer(6)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float qs[2048];
    threadgroup float red[1024];
    threadgroup float pw[256];
    uint kvh = gl_WorkGroupID.x;
    uint r = gl_WorkGroupID.y;
    uint t = gl_LocalInvocationID.x;
    uint G = p.hq / p.hkv;
    uint qpos = p.qpos0 + r;
    uint h0 = kvh * G;
    uint qbase = p.ob1 + (((r * p.hq) + h0) * p.d);
    for (uint i = t; i < (G * p.d); i += 128u)
    {
        qs[i] = _85.q[qbase + i] * p.scale;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    spvUnsafeArray<float, 8> m;
    spvUnsafeArray<float, 8> l;
    spvUnsafeArray<float, 32> acc;
    for (uint g = 0u; g < 8u; g++)
    {
        m[g] = as_type<float>(4286578688u);
        l[g] = 0.0;
        for (uint s = 0u; s < 4u; s++)
        {
            acc[(g * 4u) + s] = 0.0;
        }
    }
    uint kstride = p.hkv * p.d;
    uint k0 = 0u;
    uint k1 = p.nk;
    if (p.kps != 0u)
    {
        k0 = gl_WorkGroupID.z * p.kps;
        k1 = min(p.nk, (k0 + p.kps));
    }
    uint j = t % 32u;
    uint prt = t / 32u;
    uint dlen = ((p.d + 4u) - 1u) / 4u;
    uint d0 = min(p.d, (prt * dlen));
    uint d1 = min(p.d, (d0 + dlen));
    spvUnsafeArray<float, 8> dots;
    spvUnsafeArray<float, 16> kv;
    float _373;
    spvUnsafeArray<float, 8> mnew;
    spvUnsafeArray<float, 8> alpha;
    float _578;
    float _635;
    spvUnsafeArray<float, 32> v;
    for (uint base = k0; base < k1; base += 32u)
    {
        uint key = base + j;
        bool vis = false;
        if (key < k1)
        {
            uint kpos = 0u;
            for (uint i_1 = 0u; i_1 < p.nspans; i_1++)
            {
                uint first = _241.spans[(p.ob4 + (2u * i_1)) + 1u];
                if (key >= first)
                {
                    kpos = _241.spans[p.ob4 + (2u * i_1)] + (key - first);
                }
            }
            bool _272 = kpos <= qpos;
            bool _289;
            if (_272)
            {
                bool _278 = p.window == 0u;
                bool _288;
                if (!_278)
                {
                    _288 = (qpos - kpos) < p.window;
                }
                else
                {
                    _288 = _278;
                }
                _289 = _288;
            }
            else
            {
                _289 = _272;
            }
            vis = _289;
        }
        for (uint g_1 = 0u; g_1 < 8u; g_1++)
        {
            dots[g_1] = 0.0;
        }
        if (vis)
        {
            uint kb = (p.ob2 + (key * kstride)) + (kvh * p.d);
            for (uint i0 = d0; i0 < d1; i0 += 16u)
            {
                for (uint u = 0u; u < 16u; u++)
                {
                    kv[u] = _345.kk[kb + min((i0 + u), (d1 - 1u))];
                }
                for (uint u_1 = 0u; u_1 < 16u; u_1++)
                {
                    if ((i0 + u_1) < d1)
                    {
                        _373 = kv[u_1];
                    }
                    else
                    {
                        _373 = 0.0;
                    }
                    kv[u_1] = _373;
                }
                for (uint u_2 = 0u; u_2 < 16u; u_2++)
                {
                    uint i_2 = min((i0 + u_2), (d1 - 1u));
                    for (uint g_2 = 0u; g_2 < 8u; g_2++)
                    {
                        if (g_2 < G)
                        {
                            dots[g_2] += (qs[(g_2 * p.d) + i_2] * kv[u_2]);
                        }
                    }
                }
            }
        }
        else
        {
            if (prt == 0u)
            {
                for (uint g_3 = 0u; g_3 < 8u; g_3++)
                {
                    dots[g_3] = as_type<float>(4286578688u);
                }
            }
        }
        for (uint g_4 = 0u; g_4 < 8u; g_4++)
        {
            if (g_4 < G)
            {
                red[(((prt * 8u) + g_4) * 32u) + j] = dots[g_4];
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint e = t; e < (G * 32u); e += 128u)
        {
            uint g_5 = e / 32u;
            uint jj = e % 32u;
            float s_1 = 0.0;
            for (uint pp = 0u; pp < 4u; pp++)
            {
                s_1 += red[(((pp * 8u) + g_5) * 32u) + jj];
            }
            pw[e] = s_1;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint g_6 = 0u; g_6 < 8u; g_6++)
        {
            float cm = as_type<float>(4286578688u);
            if (g_6 < G)
            {
                for (uint jj_1 = 0u; jj_1 < 32u; jj_1++)
                {
                    cm = fast::max(cm, pw[(g_6 * 32u) + jj_1]);
                }
            }
            mnew[g_6] = fast::max(m[g_6], cm);
            if (isinf(mnew[g_6]))
            {
                _578 = 1.0;
            }
            else
            {
                _578 = exp(m[g_6] - mnew[g_6]);
            }
            alpha[g_6] = _578;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint e_1 = t; e_1 < (G * 32u); e_1 += 128u)
        {
            float s_2 = pw[e_1];
            float mg = mnew[0];
            for (uint g_7 = 1u; g_7 < 8u; g_7++)
            {
                if (g_7 == (e_1 / 32u))
                {
                    mg = mnew[g_7];
                }
            }
            if (isinf(s_2))
            {
                _635 = 0.0;
            }
            else
            {
                _635 = exp(s_2 - mg);
            }
            pw[e_1] = _635;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint cnt = min(32u, (k1 - base));
        for (uint g_8 = 0u; g_8 < 8u; g_8++)
        {
            if (g_8 < G)
            {
                float ls = 0.0;
                for (uint jj_2 = 0u; jj_2 < cnt; jj_2++)
                {
                    ls += pw[(g_8 * 32u) + jj_2];
                }
                l[g_8] = (l[g_8] * alpha[g_8]) + ls;
                for (uint s_3 = 0u; s_3 < 4u; s_3++)
                {
                    uint _707 = (g_8 * 4u) + s_3;
                    acc[_707] *= alpha[g_8];
                }
                m[g_8] = mnew[g_8];
            }
        }
        uint vb = (p.ob3 + (base * kstride)) + (kvh * p.d);
        for (uint j0 = 0u; j0 < cnt; j0 += 8u)
        {
            for (uint u_3 = 0u; u_3 < 8u; u_3++)
            {
                for (uint s_4 = 0u; s_4 < 4u; s_4++)
                {
                    uint dim = t + (s_4 * 128u);
                    float vl = _771.vv[(vb + (min((j0 + u_3), (cnt - 1u)) * kstride)) + min(dim, (p.d - 1u))];
                    bool _799 = (j0 + u_3) < cnt;
                    bool _806;
                    if (_799)
                    {
                        _806 = dim < p.d;
                    }
                    else
                    {
                        _806 = _799;
                    }
                    v[(u_3 * 4u) + s_4] = _806 ? vl : 0.0;
                }
            }
            for (uint u_4 = 0u; u_4 < 8u; u_4++)
            {
                uint jj_3 = min((j0 + u_4), 31u);
                for (uint s_5 = 0u; s_5 < 4u; s_5++)
                {
                    for (uint g_9 = 0u; g_9 < 8u; g_9++)
                    {
                        if (g_9 < G)
                        {
                            uint _852 = (g_9 * 4u) + s_5;
                            acc[_852] += (pw[(g_9 * 32u) + jj_3] * v[(u_4 * 4u) + s_5]);
                        }
                    }
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint g_10 = 0u; g_10 < 8u; g_10++)
    {
        if (g_10 >= G)
        {
            break;
        }
        uint row = ((r * p.hq) + h0) + g_10;
        if (p.kps != 0u)
        {
            uint pb = p.ob6 + (((row * gl_NumWorkGroups.z) + gl_WorkGroupID.z) * (p.d + 2u));
            if (t == 0u)
            {
                _932.part[pb] = m[g_10];
                _932.part[pb + 1u] = l[g_10];
            }
            for (uint s_6 = 0u; s_6 < 4u; s_6++)
            {
                uint dim_1 = t + (s_6 * 128u);
                if (dim_1 < p.d)
                {
                    _932.part[(pb + 2u) + dim_1] = acc[(g_10 * 4u) + s_6];
                }
            }
        }
        else
        {
            for (uint s_7 = 0u; s_7 < 4u; s_7++)
            {
                uint dim_2 = t + (s_7 * 128u);
                if (dim_2 < p.d)
                {
                    _999.dst[(p.ob5 + (row * p.d)) + dim_2] = acc[(g_10 * 4u) + s_7] / l[g_10];
                }
            }
        }
    }
}

