#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
// Index of the largest value of each row, so greedy decoding reads back one
// integer per step instead of the logits: the first index on ties; only
// values above -Inf count (NaN never does) and a row without any gives 0,
// as the host's greedy sampler (engine, tensor.ArgmaxF32) decides.
// Values are compared as integer keys (key below), which orders every
// non-NaN float exactly whatever the device does with subnormals, and
// makes -0 equal to +0 as float comparison does.
//
// mode 0: one workgroup per row (folded into y) writes the row's index to
//         dst[row];
// mode 1: workgroup (s, row) scans values [s*span, (s+1)*span) of row and
//         writes its best key and index to dst[2*(row*parts + s)] and the
//         word after (parts = the grid's x; index 0xffffffff: none), so a
//         long row (a vocabulary of logits) is read by many workgroups;
// mode 2: one workgroup per row reduces the n (key, index) pairs mode 1
//         wrote for the row, read from x, to its index in dst[row].
layout(local_size_x = 128) in;
#include "common.glsl"

layout(set = 0, binding = 0) uniform Params {
    uint ob0, ob1, ob2, ob3, ob4, ob5, ob6, ob7;
    uint n;    // values per row (modes 0 and 1), pairs per row (mode 2)
    uint rows;
    uint span; // mode 1: values per workgroup
    uint mode;
} p;

layout(set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint dst[]; };

const uint NONE = 0xffffffffu;
// key(-Inf): the bound a value's key must exceed.
const uint NEG_INF_KEY = 0x007fffffu;

// key maps float bits to a uint that orders like the floats: NaN to 0
// (below every value), -0 to the key of +0.
uint key(uint b) {
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return 0u;
    }
    if (b == 0x80000000u) {
        b = 0u;
    }
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

shared uint sk[gl_WorkGroupSize.x];
shared uint si[gl_WorkGroupSize.x];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint row, lo, hi;
    if (p.mode == 1u) {
        row = gl_WorkGroupID.y;
        lo = gl_WorkGroupID.x * p.span;
        hi = min(p.n, lo + p.span);
    } else {
        row = linear_group();
        lo = 0u;
        hi = p.n;
    }
    if (row >= p.rows) {
        return;
    }
    // Each invocation's candidates come in increasing index order, so a
    // strictly larger key keeps the first index on ties.
    uint bk = NEG_INF_KEY;
    uint bi = NONE;
    if (p.mode == 2u) {
        uint base = p.ob1 + 2u * row * p.n;
        for (uint i = t; i < p.n; i += gl_WorkGroupSize.x) {
            uint k = x[base + 2u * i];
            if (k > bk) {
                bk = k;
                bi = x[base + 2u * i + 1u];
            }
        }
    } else {
        uint base = p.ob1 + row * p.n;
        for (uint i = lo + t; i < hi; i += gl_WorkGroupSize.x) {
            uint k = key(x[base + i]);
            if (k > bk) {
                bk = k;
                bi = i;
            }
        }
    }
    // Largest key, then the smallest index holding it: in the subgroup,
    // then across subgroups.
    uint mk = subgroupMax(bk);
    uint mi = subgroupMin(bk == mk ? bi : NONE);
    if (subgroupElect()) {
        sk[gl_SubgroupID] = mk;
        si[gl_SubgroupID] = mi;
    }
    barrier();
    if (t == 0u) {
        uint k = sk[0];
        uint i = si[0];
        for (uint s = 1u; s < gl_NumSubgroups; s++) {
            if (sk[s] > k || (sk[s] == k && si[s] < i)) {
                k = sk[s];
                i = si[s];
            }
        }
        if (p.mode == 1u) {
            uint o = p.ob2 + 2u * (row * gl_NumWorkGroups.x + gl_WorkGroupID.x);
            dst[o] = k;
            dst[o + 1u] = i;
        } else {
            dst[p.ob2 + row] = i == NONE ? 0u : i;
        }
    }
}
