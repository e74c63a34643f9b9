// Workgroup-wide reductions that work for any subgroup size. Include after
// declaring the workgroup size; call from uniform control flow only.
shared float red_scratch[gl_WorkGroupSize.x];

float wg_sum(float v) {
    float s = subgroupAdd(v);
    if (subgroupElect()) {
        red_scratch[gl_SubgroupID] = s;
    }
    barrier();
    float t = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) {
        t += red_scratch[i];
    }
    barrier();
    return t;
}

float wg_max(float v) {
    float s = subgroupMax(v);
    if (subgroupElect()) {
        red_scratch[gl_SubgroupID] = s;
    }
    barrier();
    float t = red_scratch[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) {
        t = max(t, red_scratch[i]);
    }
    barrier();
    return t;
}
