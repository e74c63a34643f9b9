package models_test

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mlxchat/models"
	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// TestFullLayoutsLoad writes every family's full-size layout (the tensor
// names, shapes, dtypes and config.json of its mlx-community 4-bit
// repository, synth.FamilyRepo) with zero data, so the files are sparse
// and cost no disk, and loads it through Load: every tensor the
// architecture needs is where and how the real repository has it, and the
// sizes, window, stop ids and quantization read back as the repository
// says.
func TestFullLayoutsLoad(t *testing.T) {
	be := cpu.New(2)
	defer be.Close()
	for _, fam := range synth.Families {
		t.Run(fam, func(t *testing.T) {
			d, err := synth.FullFamily(fam)
			if err != nil {
				t.Fatal(err)
			}
			dt, err := synth.StoredDType(fam)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			opt := synth.Options{Bits: 4, GroupSize: 64, ScaleDType: dt, DenseDType: dt, ZeroData: true}
			res, err := synth.WriteFamily(dir, d, opt)
			if err != nil {
				t.Fatal(err)
			}
			m, err := models.Load(dir, be)
			if err != nil {
				t.Fatal(err)
			}
			defer m.(io.Closer).Close()
			info := m.Config()
			if info.ModelType != fam || info.VocabSize != d.Vocab || info.NumLayers != d.Layers || info.HiddenSize != d.Hidden {
				t.Errorf("info %s vocab %d layers %d hidden %d, want %s %d %d %d",
					info.ModelType, info.VocabSize, info.NumLayers, info.HiddenSize, fam, d.Vocab, d.Layers, d.Hidden)
			}
			if info.SlidingWindow != d.Window {
				t.Errorf("sliding window %d, want %d", info.SlidingWindow, d.Window)
			}
			var want []int32
			for _, id := range d.IDs.EOS {
				want = append(want, int32(id))
			}
			if !slices.Equal(info.StopIDs, want) {
				t.Errorf("stop ids %v, want %v", info.StopIDs, want)
			}
			if !strings.Contains(info.Quantization, "4-bit") || !strings.Contains(info.Quantization, "64") {
				t.Errorf("quantization %q, want 4-bit group 64", info.Quantization)
			}
			c, err := checkpoint.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Every quantized module is 4-bit with scales in the stored
			// dtype; every other float tensor has that dtype too.
			for _, p := range res.Quantized {
				q, err := c.Matrix(p)
				if err != nil {
					t.Fatal(err)
				}
				if q.Bits != 4 || q.GroupSize != 64 || q.Scales.DType != dt || q.Biases.DType != dt || q.W.DType != tensor.U32 {
					t.Fatalf("%s: %d-bit group %d scales %s", p, q.Bits, q.GroupSize, q.Scales.DType)
				}
			}
			for _, n := range c.Names() {
				x, err := c.Tensor(n)
				if err != nil {
					t.Fatal(err)
				}
				if x.DType != tensor.U32 && x.DType != dt {
					t.Errorf("%s: dtype %s, want %s", n, x.DType, dt)
				}
			}
			st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d tensors, %.2f GB (%d quantized modules), %s", fam, res.Tensors, float64(st.Size())/1e9, len(res.Quantized), info.Quantization)
		})
	}
}
