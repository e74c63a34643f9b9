package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"mlxchat/models/synth"
	"mlxchat/tensor"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkgguf:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("mkgguf", flag.ContinueOnError)
	out := fs.String("out", "", "GGUF file to write (required)")
	seed := fs.Uint64("seed", 1, "seed of the random codes")
	scale := fs.Float64("scale", 0.01, "F16 scale of every Q4_0 block")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: mkgguf -out FILE.gguf [-seed N] [-scale S]")
	}
	if h := tensor.F16ToF32(tensor.F32ToF16(float32(*scale))); !(h > 0) || math.IsInf(float64(h), 0) || h < 0x1p-14 {
		return fmt.Errorf("-scale %g: want a positive normal F16 value", *scale)
	}
	hp, err := e2bHyper()
	if err != nil {
		return err
	}
	start := time.Now()
	n, bytes, err := writeFile(*out, hp, *seed, float32(*scale))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d tensors, %.2f GB, in %.1fs\n", *out, n, float64(bytes)/1e9, time.Since(start).Seconds())
	return nil
}

// hyper are the Gemma 3n text-model hyperparameters the file carries.
type hyper struct {
	vocab, hidden, layers, ffn int
	heads, kvHeads, headDim    int
	perLayer, altup, active    int
	laurel, kvShared, window   int
	ctx                        int
	ropeGlobal, ropeLocal      float64
	eps, softcap               float64
	sparsity                   []float64
	sliding                    []bool
}

// e2bHyper reads E2B's configuration from the same parameter list the
// synthetic MLX checkpoint is built from (models/synth), so both files
// have the same shapes.
func e2bHyper() (hyper, error) {
	p, err := synth.LoadE2BParams()
	if err != nil {
		return hyper{}, err
	}
	t, ok := p.Config["text_config"].(map[string]any)
	if !ok {
		return hyper{}, fmt.Errorf("E2B parameter list: no text_config")
	}
	var bad []string
	num := func(k string) float64 {
		v, ok := t[k].(float64)
		if !ok {
			bad = append(bad, k)
		}
		return v
	}
	h := hyper{
		vocab: int(num("vocab_size")), hidden: int(num("hidden_size")), layers: int(num("num_hidden_layers")),
		heads: int(num("num_attention_heads")), kvHeads: int(num("num_key_value_heads")), headDim: int(num("head_dim")),
		perLayer: int(num("hidden_size_per_layer_input")), altup: int(num("altup_num_inputs")),
		active: int(num("altup_active_idx")), laurel: int(num("laurel_rank")), kvShared: int(num("num_kv_shared_layers")),
		window: int(num("sliding_window")), ctx: int(num("max_position_embeddings")),
		eps: num("rms_norm_eps"), softcap: num("final_logit_softcapping"),
	}
	ffn, _ := t["intermediate_size"].([]any)
	for i, v := range ffn {
		f, _ := v.(float64)
		if i == 0 {
			h.ffn = int(f)
		} else if int(f) != h.ffn {
			return hyper{}, fmt.Errorf("E2B parameter list: per-layer intermediate sizes differ; the writer assumes one")
		}
	}
	sp, _ := t["activation_sparsity_pattern"].([]any)
	for _, v := range sp {
		f, _ := v.(float64)
		h.sparsity = append(h.sparsity, f)
	}
	lt, _ := t["layer_types"].([]any)
	for _, v := range lt {
		h.sliding = append(h.sliding, v == "sliding_attention")
	}
	rp, _ := t["rope_parameters"].(map[string]any)
	theta := func(kind string) float64 {
		m, _ := rp[kind].(map[string]any)
		v, ok := m["rope_theta"].(float64)
		if !ok {
			bad = append(bad, "rope_parameters."+kind)
		}
		return v
	}
	h.ropeGlobal, h.ropeLocal = theta("full_attention"), theta("sliding_attention")
	if len(bad) > 0 || h.ffn == 0 || len(h.sparsity) != h.layers || len(h.sliding) != h.layers {
		return hyper{}, fmt.Errorf("E2B parameter list: missing or malformed %s", strings.Join(append(bad, "intermediate_size/activation_sparsity_pattern/layer_types"), ", "))
	}
	return h, nil
}

// GGUF value types and ggml tensor types used here.
const (
	gInt32   = 5
	gUint32  = 4
	gFloat32 = 6
	gBool    = 7
	gString  = 8
	gArray   = 9

	typeF32  = 0
	typeQ4_0 = 2

	alignment  = 32
	q4Block    = 32 // weights per Q4_0 block
	q4BlockLen = 18 // F16 scale + 16 bytes of nibbles
)

// kv is one metadata entry.
type kv struct {
	key string
	typ uint32
	val any
}

// tensorSpec is one tensor: ne (innermost first), its ggml type and how
// its bytes are made.
type tensorSpec struct {
	name string
	ne   []uint64
	typ  uint32
	fill func(w io.Writer, n uint64) error
}

func (t tensorSpec) elems() uint64 {
	n := uint64(1)
	for _, d := range t.ne {
		n *= d
	}
	return n
}

func (t tensorSpec) bytes() uint64 {
	if t.typ == typeQ4_0 {
		return t.elems() / q4Block * q4BlockLen
	}
	return 4 * t.elems()
}

// metadata is what llama.cpp's gemma3n loader reads, under the keys and
// value types convert_hf_to_gguf.py writes.
func metadata(h hyper) []kv {
	a := "gemma3n."
	ffn := make([]int32, h.layers)
	for i := range ffn {
		ffn[i] = int32(h.ffn)
	}
	// The converter stores the sparsity as the normal quantile of the
	// target fraction (-Inf where there is none).
	scale := make([]float32, h.layers)
	for i, p := range h.sparsity {
		scale[i] = float32(math.Inf(-1))
		if p > 0 {
			scale[i] = float32(math.Sqrt2 * math.Erfinv(2*p-1))
		}
	}
	toks, scores, types := vocabulary(h.vocab)
	return []kv{
		{"general.architecture", gString, "gemma3n"},
		{"general.name", gString, "gemma-3n-E2B synthetic (random weights)"},
		{"general.file_type", gUint32, uint32(2)}, // mostly Q4_0
		{"general.quantization_version", gUint32, uint32(2)},
		{"general.alignment", gUint32, uint32(alignment)},
		{a + "block_count", gUint32, uint32(h.layers)},
		{a + "context_length", gUint32, uint32(h.ctx)},
		{a + "embedding_length", gUint32, uint32(h.hidden)},
		{a + "feed_forward_length", gArray, ffn},
		{a + "attention.head_count", gUint32, uint32(h.heads)},
		{a + "attention.head_count_kv", gUint32, uint32(h.kvHeads)},
		{a + "rope.freq_base", gFloat32, float32(h.ropeGlobal)},
		{a + "rope.freq_base_swa", gFloat32, float32(h.ropeLocal)},
		{a + "attention.layer_norm_rms_epsilon", gFloat32, float32(h.eps)},
		{a + "attention.key_length", gUint32, uint32(h.headDim)},
		{a + "attention.value_length", gUint32, uint32(h.headDim)},
		{a + "final_logit_softcapping", gFloat32, float32(h.softcap)},
		{a + "attention.sliding_window", gUint32, uint32(h.window)},
		{a + "altup.active_idx", gUint32, uint32(h.active)},
		{a + "altup.num_inputs", gUint32, uint32(h.altup)},
		{a + "embedding_length_per_layer_input", gUint32, uint32(h.perLayer)},
		{a + "attention.shared_kv_layers", gUint32, uint32(h.kvShared)},
		{a + "activation_sparsity_scale", gArray, scale},
		{a + "attention.sliding_window_pattern", gArray, h.sliding},
		{"tokenizer.ggml.model", gString, "llama"},
		{"tokenizer.ggml.tokens", gArray, toks},
		{"tokenizer.ggml.scores", gArray, scores},
		{"tokenizer.ggml.token_type", gArray, types},
		{"tokenizer.ggml.bos_token_id", gUint32, uint32(2)},
		{"tokenizer.ggml.eos_token_id", gUint32, uint32(1)},
		{"tokenizer.ggml.unknown_token_id", gUint32, uint32(3)},
		{"tokenizer.ggml.padding_token_id", gUint32, uint32(0)},
		{"tokenizer.ggml.add_bos_token", gBool, true},
		{"tokenizer.ggml.add_eos_token", gBool, false},
	}
}

// vocabulary is a SentencePiece-style vocabulary of n unique pieces:
// <pad> <eos> <bos> <unk> (control, unknown), the 256 byte tokens, letters,
// digits and punctuation with and without the word-start mark, then
// filler pieces. Token types: 1 normal, 2 unknown, 3 control, 6 byte.
func vocabulary(n int) ([]string, []float32, []int32) {
	toks := []string{"<pad>", "<eos>", "<bos>", "<unk>"}
	types := []int32{3, 3, 3, 2}
	for i := 0; i < 256; i++ {
		toks = append(toks, fmt.Sprintf("<0x%02X>", i))
		types = append(types, 6)
	}
	var pieces []string
	for c := 'a'; c <= 'z'; c++ {
		pieces = append(pieces, string(c))
	}
	for c := 'A'; c <= 'Z'; c++ {
		pieces = append(pieces, string(c))
	}
	for _, p := range append([]string(nil), pieces...) {
		pieces = append(pieces, "\u2581"+p)
	}
	pieces = append(pieces, "\u2581")
	for d := 0; d < 10; d++ {
		pieces = append(pieces, fmt.Sprint(d))
	}
	for _, c := range ".,!?;:'\"()-" {
		pieces = append(pieces, string(c))
	}
	for _, p := range pieces {
		toks = append(toks, p)
		types = append(types, 1)
	}
	for i := 0; len(toks) < n; i++ {
		toks = append(toks, fmt.Sprintf("\u2581tok%d", i))
		types = append(types, 1)
	}
	toks, types = toks[:n], types[:n]
	scores := make([]float32, n)
	for i := 260; i < n; i++ {
		scores[i] = -float32(i-260) / 1000
	}
	return toks, scores, types
}

// tensors lists the file's tensors in the layout convert_hf_to_gguf.py
// writes for Gemma 3n: ne is (columns, rows[, stack]); every matrix MLX's
// 4-bit checkpoint quantizes is Q4_0 (4.5 bits a weight, the size of
// MLX's group-64 4-bit with BF16 scales and biases), norms and the small
// AltUp coefficient matrices F32. The per-layer embedding table is padded
// to the full vocabulary, as the converter does; the output head is tied
// to token_embd.
func tensors(h hyper, rng *rand.ChaCha8, scale float32) []tensorSpec {
	q4 := func(name string, ne ...uint64) tensorSpec {
		return tensorSpec{name, ne, typeQ4_0, q4Fill(rng, scale)}
	}
	ones := func(name string, n int) tensorSpec {
		return tensorSpec{name, []uint64{uint64(n)}, typeF32, constFill(1)}
	}
	small := func(name string, ne ...uint64) tensorSpec {
		return tensorSpec{name, ne, typeF32, uniformFill(rng, 0.05)}
	}
	u := func(v int) uint64 { return uint64(v) }
	qDim, kvDim, pl := h.heads*h.headDim, h.kvHeads*h.headDim, h.perLayer*h.layers
	ts := []tensorSpec{
		q4("token_embd.weight", u(h.hidden), u(h.vocab)),
		q4("per_layer_token_embd.weight", u(pl), u(h.vocab)),
		q4("per_layer_model_proj.weight", u(h.hidden), u(pl)),
		ones("per_layer_proj_norm.weight", h.perLayer),
		q4("altup_proj.weight", u(h.hidden), u(h.hidden), u(h.altup-1)),
		q4("altup_unembd_proj.weight", u(h.hidden), u(h.hidden), u(h.altup-1)),
		ones("output_norm.weight", h.hidden),
	}
	for i := 0; i < h.layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			ones(p+"attn_norm.weight", h.hidden),
			q4(p+"attn_q.weight", u(h.hidden), u(qDim)),
			// KV-shared layers keep their k/v projections, as the
			// checkpoints do; they are never read.
			q4(p+"attn_k.weight", u(h.hidden), u(kvDim)),
			q4(p+"attn_v.weight", u(h.hidden), u(kvDim)),
			q4(p+"attn_output.weight", u(qDim), u(h.hidden)),
			ones(p+"attn_q_norm.weight", h.headDim),
			ones(p+"attn_k_norm.weight", h.headDim),
			ones(p+"post_attention_norm.weight", h.hidden),
			ones(p+"ffn_norm.weight", h.hidden),
			q4(p+"ffn_gate.weight", u(h.hidden), u(h.ffn)),
			q4(p+"ffn_up.weight", u(h.hidden), u(h.ffn)),
			q4(p+"ffn_down.weight", u(h.ffn), u(h.hidden)),
			ones(p+"post_ffw_norm.weight", h.hidden),
			q4(p+"inp_gate.weight", u(h.hidden), u(h.perLayer)),
			q4(p+"proj.weight", u(h.perLayer), u(h.hidden)),
			ones(p+"post_norm.weight", h.hidden),
			small(p+"altup_correct_coef.weight", u(h.altup), u(h.altup)),
			ones(p+"altup_correct_scale.weight", h.hidden),
			small(p+"altup_predict_coef.weight", u(h.altup), u(h.altup*h.altup)),
			q4(p+"altup_router.weight", u(h.hidden), u(h.altup)),
			ones(p+"altup_router_norm.weight", h.hidden),
			q4(p+"laurel_l.weight", u(h.hidden), u(h.laurel)),
			q4(p+"laurel_r.weight", u(h.laurel), u(h.hidden)),
			ones(p+"laurel_post_norm.weight", h.hidden),
		)
	}
	return ts
}

// q4Fill writes random Q4_0 blocks: the F16 scale, then 16 random bytes
// of codes.
func q4Fill(rng *rand.ChaCha8, scale float32) func(io.Writer, uint64) error {
	s := tensor.F32ToF16(scale)
	return func(w io.Writer, n uint64) error {
		blk := make([]byte, 4096*q4BlockLen)
		for left := n; left > 0; {
			k := min(left, uint64(len(blk)))
			b := blk[:k]
			_, _ = rng.Read(b)
			for i := uint64(0); i+1 < k; i += q4BlockLen {
				binary.LittleEndian.PutUint16(b[i:], s)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			left -= k
		}
		return nil
	}
}

func constFill(v float32) func(io.Writer, uint64) error {
	return func(w io.Writer, n uint64) error {
		b := make([]byte, n)
		for i := uint64(0); i < n; i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(v))
		}
		_, err := w.Write(b)
		return err
	}
}

func uniformFill(rng *rand.ChaCha8, r float64) func(io.Writer, uint64) error {
	return func(w io.Writer, n uint64) error {
		b := make([]byte, n)
		var u [8]byte
		for i := uint64(0); i < n; i += 4 {
			_, _ = rng.Read(u[:])
			f := (float64(binary.LittleEndian.Uint64(u[:])>>11)/(1<<53)*2 - 1) * r
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(f)))
		}
		_, err := w.Write(b)
		return err
	}
}

// writeFile writes the GGUF (version 3) file: header, metadata, tensor
// infos, then the tensor data, each tensor aligned to 32 bytes. It returns
// the number of tensors and the file size.
func writeFile(path string, h hyper, seed uint64, scale float32) (int, int64, error) {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	rng := rand.NewChaCha8(s)
	ts := tensors(h, rng, scale)
	meta := metadata(h)
	for _, t := range ts {
		if t.typ == typeQ4_0 && t.ne[0]%q4Block != 0 {
			return 0, 0, fmt.Errorf("%s: %d columns, not a multiple of %d", t.name, t.ne[0], q4Block)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	cw := &countWriter{w: bufio.NewWriterSize(f, 4<<20)}
	e := &enc{w: cw}
	e.raw([]byte("GGUF"))
	e.u32(3)
	e.u64(uint64(len(ts)))
	e.u64(uint64(len(meta)))
	for _, m := range meta {
		e.str(m.key)
		e.u32(m.typ)
		e.value(m.typ, m.val)
	}
	var off uint64
	for _, t := range ts {
		e.str(t.name)
		e.u32(uint32(len(t.ne)))
		for _, d := range t.ne {
			e.u64(d)
		}
		e.u32(t.typ)
		e.u64(off)
		off = pad(off+t.bytes(), alignment)
	}
	e.raw(make([]byte, pad(uint64(cw.n), alignment)-uint64(cw.n)))
	base := uint64(cw.n)
	for _, t := range ts {
		if e.err == nil {
			e.err = t.fill(cw, t.bytes())
		}
		e.raw(make([]byte, pad(uint64(cw.n)-base, alignment)-(uint64(cw.n)-base)))
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	if cerr := f.Close(); e.err == nil {
		e.err = cerr
	}
	if e.err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, e.err)
	}
	return len(ts), cw.n, nil
}

func pad(n, a uint64) uint64 { return (n + a - 1) / a * a }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// enc writes little-endian GGUF values, keeping the first error.
type enc struct {
	w   io.Writer
	err error
}

func (e *enc) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *enc) u32(v uint32) { e.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *enc) u64(v uint64) { e.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *enc) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *enc) value(typ uint32, v any) {
	switch x := v.(type) {
	case string:
		e.str(x)
	case uint32:
		e.u32(x)
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		e.raw([]byte{b})
	case []int32:
		e.u32(gInt32)
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	case []float32:
		e.u32(gFloat32)
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	case []bool:
		e.u32(gBool)
		e.u64(uint64(len(x)))
		for _, b := range x {
			e.value(gBool, b)
		}
	case []string:
		e.u32(gString)
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	default:
		e.err = fmt.Errorf("metadata value %T of type %d", v, typ)
	}
}
