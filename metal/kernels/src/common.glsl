// Shared helpers for the mlxchat compute kernels. Every kernel reads its
// parameters from a uniform block at binding 0 (never push constants: under
// spirv-cross --msl-decoration-binding those would collide with buffer 0)
// and its tensors from storage buffers at bindings 1..7.
//
// 16-bit tensors (F16, BF16 scales, biases and weights) are read through
// uint arrays and unpacked by hand, so no 16-bit storage feature is needed.
// Reductions use subgroup operations combined across subgroups through
// shared memory, so any subgroup size works (lavapipe 8, NVIDIA and Apple 32).

// Element types of float tensors, as passed in the parameter blocks.
#define DT_F32 0u
#define DT_F16 1u
#define DT_BF16 2u

// Raw 16 bits of element idx of a 16-bit array stored as uints.
#define HALF_BITS(buf, idx) ((buf[(idx) >> 1] >> (((idx) & 1u) << 4)) & 0xffffu)

float cvt16(uint bits, uint dt) {
    return dt == DT_BF16 ? uintBitsToFloat(bits << 16) : unpackHalf2x16(bits).x;
}

// Element idx of a float tensor of type dt stored in a uint array.
#define LOADF(buf, idx, dt) ((dt) == DT_F32 ? uintBitsToFloat(buf[(idx)]) : cvt16(HALF_BITS(buf, (idx)), (dt)))

// tanh that neither overflows nor loses the sign for large |x|.
float safe_tanh(float x) {
    float t = exp(-2.0 * abs(x));
    float r = (1.0 - t) / (1.0 + t);
    return x < 0.0 ? -r : r;
}

// Include after the layout(local_size_x) declaration: gl_WorkGroupSize is
// fixed where a function is defined.

// Linear invocation index of a 1-D problem whose workgroups may be folded
// into a 2-D grid (x at most 65535 groups).
uint linear_id() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}

// Linear workgroup index for one-workgroup-per-row kernels.
uint linear_group() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
