package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/tensor"
)

// ggufReader decodes what TestWriteFile needs of a GGUF file, written
// from the format's description (not from writeFile).
type ggufReader struct {
	b   []byte
	off int
	t   *testing.T
}

func (r *ggufReader) take(n int) []byte {
	if r.off+n > len(r.b) {
		r.t.Fatalf("read past the end at %d (+%d of %d)", r.off, n, len(r.b))
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}
func (r *ggufReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *ggufReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }
func (r *ggufReader) str() string { return string(r.take(int(r.u64()))) }

func (r *ggufReader) value(typ uint32) any {
	switch typ {
	case 4:
		return r.u32()
	case 5:
		return int32(r.u32())
	case 6:
		return math.Float32frombits(r.u32())
	case 7:
		return r.take(1)[0] != 0
	case 8:
		return r.str()
	case 9:
		et, n := r.u32(), r.u64()
		vals := make([]any, n)
		for i := range vals {
			vals[i] = r.value(et)
		}
		return vals
	}
	r.t.Fatalf("value type %d", typ)
	return nil
}

func tinyHyper() hyper {
	return hyper{vocab: 400, hidden: 64, layers: 3, ffn: 128, heads: 2, kvHeads: 1, headDim: 32, perLayer: 32,
		altup: 4, active: 0, laurel: 32, kvShared: 1, window: 16, ctx: 512, ropeGlobal: 1e6, ropeLocal: 1e4,
		eps: 1e-6, softcap: 30, sparsity: []float64{0.95, 0, 0}, sliding: []bool{true, true, false}}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	h := tinyHyper()
	n, size, err := writeFile(path, h, 7, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != size {
		t.Fatalf("file has %d bytes, writeFile says %d", len(b), size)
	}
	r := &ggufReader{b: b, t: t}
	if !bytes.Equal(r.take(4), []byte("GGUF")) || r.u32() != 3 {
		t.Fatal("not a GGUF v3 header")
	}
	nt, nkv := r.u64(), r.u64()
	if int(nt) != n {
		t.Fatalf("%d tensors in the header, %d written", nt, n)
	}
	kvs := map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := r.str()
		kvs[k] = r.value(r.u32())
	}
	for k, want := range map[string]any{
		"general.architecture": "gemma3n", "gemma3n.block_count": uint32(3), "gemma3n.embedding_length": uint32(64),
		"gemma3n.attention.head_count_kv": uint32(1), "gemma3n.attention.sliding_window": uint32(16),
		"gemma3n.embedding_length_per_layer_input": uint32(32), "gemma3n.rope.freq_base_swa": float32(1e4),
		"tokenizer.ggml.model": "llama", "tokenizer.ggml.bos_token_id": uint32(2), "tokenizer.ggml.add_bos_token": true,
	} {
		if kvs[k] != want {
			t.Errorf("%s = %v (%T), want %v", k, kvs[k], kvs[k], want)
		}
	}
	if toks := kvs["tokenizer.ggml.tokens"].([]any); len(toks) != h.vocab || toks[2] != "<bos>" || toks[4] != "<0x00>" {
		t.Errorf("vocabulary of %d tokens starting %v", len(toks), toks[:5])
	}
	seen := map[any]bool{}
	for _, tok := range kvs["tokenizer.ggml.tokens"].([]any) {
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
	}
	sc := kvs["gemma3n.activation_sparsity_scale"].([]any)
	if d := float64(sc[0].(float32)) - 1.6448536; math.Abs(d) > 1e-5 || !math.IsInf(float64(sc[1].(float32)), -1) {
		t.Errorf("sparsity scale %v, want [1.6448536 -Inf -Inf]", sc)
	}
	if p := kvs["gemma3n.attention.sliding_window_pattern"].([]any); len(p) != 3 || p[0] != true || p[2] != false {
		t.Errorf("sliding window pattern %v", p)
	}
	type info struct {
		name      string
		ne        []uint64
		typ, off  uint64
		dataBytes uint64
	}
	var infos []info
	for i := uint64(0); i < nt; i++ {
		in := info{name: r.str()}
		nd := r.u32()
		elems := uint64(1)
		for d := uint32(0); d < nd; d++ {
			in.ne = append(in.ne, r.u64())
			elems *= in.ne[d]
		}
		in.typ, in.off = uint64(r.u32()), r.u64()
		switch in.typ {
		case 0:
			in.dataBytes = 4 * elems
		case 2:
			in.dataBytes = elems / 32 * 18
		default:
			t.Fatalf("%s: type %d", in.name, in.typ)
		}
		infos = append(infos, in)
	}
	data := (r.off + 31) / 32 * 32
	want := uint64(0)
	names := map[string]info{}
	for _, in := range infos {
		if in.off != want || in.off%32 != 0 {
			t.Fatalf("%s at offset %d, want %d", in.name, in.off, want)
		}
		want = (in.off + in.dataBytes + 31) / 32 * 32
		names[in.name] = in
	}
	if uint64(len(b)) != uint64(data)+want {
		t.Fatalf("file is %d bytes, tensor data ends at %d", len(b), uint64(data)+want)
	}
	// 3 + 2 + 2 global tensors plus 24 per layer.
	if len(infos) != 7+24*h.layers {
		t.Errorf("%d tensors", len(infos))
	}
	emb := names["token_embd.weight"]
	if emb.typ != 2 || emb.ne[0] != 64 || emb.ne[1] != 400 {
		t.Errorf("token_embd %+v", emb)
	}
	if pl := names["per_layer_token_embd.weight"]; pl.ne[0] != 32*3 || pl.ne[1] != 400 {
		t.Errorf("per_layer_token_embd %+v", pl)
	}
	if ap := names["altup_proj.weight"]; len(ap.ne) != 3 || ap.ne[2] != 3 {
		t.Errorf("altup_proj %+v", ap)
	}
	// Every Q4_0 block starts with the F16 scale.
	blk := b[uint64(data)+emb.off:]
	for i := 0; i < 64; i++ {
		if s := tensor.F16ToF32(binary.LittleEndian.Uint16(blk[18*i:])); math.Abs(float64(s)-0.01) > 1e-5 {
			t.Fatalf("block %d scale %g", i, s)
		}
	}
	norm := names["blk.0.attn_norm.weight"]
	if v := math.Float32frombits(binary.LittleEndian.Uint32(b[uint64(data)+norm.off:])); v != 1 {
		t.Errorf("norm weight %g, want 1", v)
	}
}

func TestE2BHyper(t *testing.T) {
	h, err := e2bHyper()
	if err != nil {
		t.Fatal(err)
	}
	if h.vocab != 262400 || h.hidden != 2048 || h.layers != 30 || h.ffn != 8192 || h.headDim != 256 ||
		h.perLayer != 256 || h.kvShared != 10 || h.window != 512 || h.sliding[4] || !h.sliding[0] {
		t.Errorf("E2B hyperparameters %+v", h)
	}
}

func TestRunErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"-out", "x", "extra"}, {"-out", "x", "-scale", "0"}, {"-out", "x", "-scale", "1e9"}} {
		err := run(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "out") && !strings.Contains(err.Error(), "scale") {
			t.Errorf("run(%q) = %v, want a usage or -scale error", args, err)
		}
	}
}
