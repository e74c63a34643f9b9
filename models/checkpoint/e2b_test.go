package checkpoint_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

// e2bEnv names a directory holding a full-size synthetic (or real) E2B
// checkpoint, e.g. made by `go run ./models/cmd/mkmodel -kind e2b -out DIR`.
const e2bEnv = "MLXCHAT_E2B_DIR"

// checkE2BText resolves every text-model matrix of an E2B checkpoint with
// the shape the architecture implies and checks the mlx-community layout:
// 4-bit, group 64, BF16 scales.
func checkE2BText(t testing.TB, c *checkpoint.Checkpoint) {
	d := synth.E2BGemma3n()
	p := "language_model.model."
	H := d.Hidden
	mats := map[string][2]int{
		p + "embed_tokens":               {d.Vocab, H},
		p + "embed_tokens_per_layer":     {d.VocabPerLayer, d.Layers * d.PerLayerHidden},
		p + "per_layer_model_projection": {d.Layers * d.PerLayerHidden, H},
	}
	for i := 0; i < d.Layers; i++ {
		l := fmt.Sprintf("%slayers.%d.", p, i)
		for name, s := range map[string][2]int{
			"self_attn.q_proj": {d.Heads * d.HeadDim, H}, "self_attn.k_proj": {d.KVHeads * d.HeadDim, H},
			"self_attn.v_proj": {d.KVHeads * d.HeadDim, H}, "self_attn.o_proj": {H, d.Heads * d.HeadDim},
			"mlp.gate_proj": {d.Intermediate, H}, "mlp.up_proj": {d.Intermediate, H}, "mlp.down_proj": {H, d.Intermediate},
			"laurel.linear_left": {d.LaurelRank, H}, "laurel.linear_right": {H, d.LaurelRank},
			"per_layer_input_gate": {d.PerLayerHidden, H}, "per_layer_projection": {H, d.PerLayerHidden},
			"altup.modality_router": {d.AltUpInputs, H},
		} {
			mats[l+name] = s
		}
	}
	for name, s := range mats {
		m, err := c.MatrixShape(name, s[0], s[1])
		if err != nil {
			t.Fatal(err)
		}
		if m.Bits != 4 || m.GroupSize != 64 || m.Scales.DType != tensor.BF16 {
			t.Fatalf("%s: bits %d group %d scales %s, want 4-bit group 64 BF16", name, m.Bits, m.GroupSize, m.Scales.DType)
		}
	}
}

// TestOpenE2B maps the checkpoint in $MLXCHAT_E2B_DIR (skipped when unset)
// and requires the mapping itself to take well under a second.
func TestOpenE2B(t *testing.T) {
	dir := os.Getenv(e2bEnv)
	if dir == "" {
		t.Skipf("set %s to a full-size E2B checkpoint (go run ./models/cmd/mkmodel -kind e2b -out DIR)", e2bEnv)
	}
	start := time.Now()
	c, err := checkpoint.Open(dir)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("mapped %s: %d tensors, %.2f GB in %d file(s) in %v", dir, len(c.Names()), float64(c.TotalBytes())/1e9, len(c.Files()), elapsed)
	if elapsed > 500*time.Millisecond {
		t.Errorf("mapping took %v, want well under a second", elapsed)
	}
	checkE2BText(t, c)
}

// BenchmarkOpenE2B measures opening and mapping a full-size E2B checkpoint:
// the one in $MLXCHAT_E2B_DIR, or one generated once into a temporary
// directory (about 4.5 GB and 10 s; skipped with -short).
func BenchmarkOpenE2B(b *testing.B) {
	dir := os.Getenv(e2bEnv)
	if dir == "" {
		if testing.Short() {
			b.Skipf("-short: not generating a 4.5 GB checkpoint; set %s", e2bEnv)
		}
		dir = b.TempDir()
		if _, err := synth.WriteE2B(dir, synth.Options{Bits: 4, Seed: 1, Towers: true}); err != nil {
			b.Fatal(err)
		}
	}
	var size int64
	b.Run("open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c, err := checkpoint.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			size = c.TotalBytes()
			c.Close()
		}
		b.ReportMetric(float64(size)/1e9, "GB")
	})
	b.Run("open+text-matrices", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			c, err := checkpoint.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			checkE2BText(b, c)
			c.Close()
		}
	})
}

// BenchmarkOpenTiny measures the fixed cost of opening a small checkpoint.
func BenchmarkOpenTiny(b *testing.B) {
	dir := b.TempDir()
	if _, err := synth.WriteTiny(dir, synth.Options{Bits: 4}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		c, err := checkpoint.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
