// Epilogue programs of the chained kernels (qmvx4/qmvx8, qmvxw4/qmvxw8 from qmv.comp,
// normx, eltx from eltwise.comp, mmx from qmm.comp): elementwise ops that
// the backend recorded after a launch, on the values it wrote, applied to
// each value before it is stored, so they cost no launch (and no barrier)
// of their own. Include after defining MAXEPI, ldv(slot, i) and
// stv(slot, i, v), which read and write float i of the buffer bound at a
// slot, with p.nepi and p.epi[] in the parameter block.
//
// An op is one uvec4 (code, offset, nb, f):
//   code bits 0-7: the eltwise op (0 add, 1 mul, 2 scale by f, 3 softcap
//   with cap f, 4 GELU tanh, 6 SiLU), bits 8-11: the operand's slot, bit
//   16: a side op;
//   plain op: v = a op b with a = v and b = operand[offset + i % nb];
//   side op: operand[offset + i] = operand[offset + i] op v, v unchanged
//   (an in-place add of the value into another tensor).
// i is the value's index within the range the recorded ops covered. Each
// op loads its operand when it runs: holding every operand in an array
// fetched ahead (epi_load) made normx twice as slow on the H200, the
// dynamically indexed arrays living in local memory.

float epi_elt(uint op, float x, float y, float f) {
    switch (op) {
    case 0u:
        return x + y;
    case 1u:
        return x * y;
    case 2u:
        return x * f;
    case 3u:
        return safe_tanh(x / f) * f;
    case 4u:
        return 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case 6u:
        return x / (1.0 + exp(-x));
    }
    return x;
}

// epi_run applies the ops to value v of index i, stores the side ops'
// results and returns v.
float epi_run(float v, uint i) {
    for (uint k = 0u; k < p.nepi; k++) {
        uvec4 e = p.epi[k];
        uint op = e.x & 0xffu;
        uint slot = (e.x >> 8) & 0xfu;
        float f = uintBitsToFloat(e.w);
        if ((e.x & 0x10000u) != 0u) {
            uint j = e.y + i;
            stv(slot, j, epi_elt(op, ldv(slot, j), v, f));
        } else {
            float b = op <= 1u ? ldv(slot, e.y + i % e.z) : 0.0;
            v = epi_elt(op, v, b, f);
        }
    }
    return v;
}
