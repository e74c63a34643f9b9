package checkpoint_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
	"mlxchat/tensor"
)

const vlm = "language_model.model."

func writeTiny(t testing.TB, opt synth.Options) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := synth.WriteTiny(dir, opt); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t testing.TB, dir string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOpenTiny(t *testing.T) {
	d := synth.TinyGemma3n()
	for _, bits := range []int{0, 4, 8} {
		c := open(t, writeTiny(t, synth.Options{Bits: bits, Seed: 3}))
		if c.Config.Path != filepath.Join(c.Dir, "config.json") {
			t.Fatalf("config path %s", c.Config.Path)
		}
		mt, err := c.Config.ModelType()
		if err != nil || mt != "gemma3n" {
			t.Fatalf("model_type %q %v", mt, err)
		}
		if (c.Quant != nil) != (bits != 0) {
			t.Fatalf("bits %d: quant %+v", bits, c.Quant)
		}
		ids, err := c.StopTokenIDs()
		if err != nil || !slices.Equal(ids, []int{1, 106}) {
			t.Fatalf("stop ids %v %v", ids, err)
		}
		if p, ok := c.HasPrefix("model.language_model.", vlm); !ok || p != vlm {
			t.Fatalf("prefix %q %v", p, ok)
		}
		// Every projection of every layer has the logical size the config
		// implies, quantized with the config's bits.
		for i := 0; i < d.Layers; i++ {
			l := vlm + "layers." + strconv.Itoa(i) + "."
			for _, m := range []struct {
				name    string
				out, in int
			}{
				{"self_attn.q_proj", d.Heads * d.HeadDim, d.Hidden},
				{"self_attn.k_proj", d.KVHeads * d.HeadDim, d.Hidden},
				{"mlp.down_proj", d.Hidden, d.Intermediate},
				{"laurel.linear_right", d.Hidden, d.LaurelRank},
				{"altup.prediction_coefs", d.AltUpInputs * d.AltUpInputs, d.AltUpInputs},
			} {
				mat, err := c.MatrixShape(l+m.name, m.out, m.in)
				if err != nil {
					t.Fatal(err)
				}
				wantBits := bits
				if m.name == "altup.prediction_coefs" {
					wantBits = 0 // in = 4 is not a multiple of the group size
				}
				if mat.Bits != wantBits {
					t.Fatalf("%s: bits %d want %d", m.name, mat.Bits, wantBits)
				}
			}
		}
		if _, err := c.FloatTensor(vlm+"norm.weight", d.Hidden); err != nil {
			t.Fatal(err)
		}
		if c.TotalBytes() <= 0 || len(c.Files()) != 1 || len(c.Names()) == 0 {
			t.Fatalf("total %d files %v", c.TotalBytes(), c.Files())
		}
	}
}

// TestTensorZeroCopy checks that Tensor returns the mapped bytes written by
// the safetensors writer.
func TestTensorZeroCopy(t *testing.T) {
	dir := t.TempDir()
	vals := []float32{1.5, -2, 3.25, 0, 1e-3, 7}
	data := make([]byte, 24)
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	specs := []synth.TensorSpec{
		{Name: "lin.weight", DType: tensor.F32, Shape: []int{2, 3}, Data: data},
		{Name: "v", DType: tensor.BF16, Shape: []int{5}, Fill: synth.Fill{Center: 1, Spread: 0.5}},
	}
	if _, err := synth.WriteWeights(dir, specs, 0, 1); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, `{"model_type":"x"}`)
	c := open(t, dir)
	w, err := c.Tensor("lin.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.F32(), vals) || !slices.Equal(w.Shape, []int{2, 3}) {
		t.Fatalf("got %v %v", w.F32(), w.Shape)
	}
	m, err := c.Matrix("lin")
	if err != nil || m.Quantized() || m.Out != 2 || m.In != 3 {
		t.Fatalf("matrix %+v %v", m, err)
	}
	v, err := c.Tensor("v")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := v.ToF32()
	for _, x := range got {
		if x < 0.5 || x > 1.5 {
			t.Fatalf("fill out of range: %v", got)
		}
	}
	if _, err := c.TensorShape("lin.weight", 3, 2); err == nil || !strings.Contains(err.Error(), "has shape [2 3], want [3 2]") {
		t.Fatalf("shape check: %v", err)
	}
	if _, err := c.TensorShape("lin.weight", -1, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tensor("nope"); err == nil || !strings.Contains(err.Error(), `tensor "nope" not found`) {
		t.Fatalf("missing tensor: %v", err)
	}
	c.Close()
	if _, err := c.Tensor("lin.weight"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("after close: %v", err)
	}
}

func writeConfig(t testing.TB, dir, cfg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestShardedMatchesSingle(t *testing.T) {
	single := open(t, writeTiny(t, synth.Options{Bits: 4, Seed: 9}))
	shardDir := writeTiny(t, synth.Options{Bits: 4, Seed: 9, ShardBytes: 200 << 10})
	sharded := open(t, shardDir)
	if len(sharded.Files()) < 3 {
		t.Fatalf("want several shards, got %v", sharded.Files())
	}
	if !slices.Equal(single.Names(), sharded.Names()) || single.TotalBytes() != sharded.TotalBytes() {
		t.Fatalf("names or sizes differ: %d vs %d", single.TotalBytes(), sharded.TotalBytes())
	}
	for _, n := range single.Names() {
		a, _ := single.Tensor(n)
		b, _ := sharded.Tensor(n)
		if !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("%s differs between single and sharded", n)
		}
	}
}

// shards returns the paths of a sharded checkpoint's weight files.
func shards(t testing.TB, dir string) []string {
	t.Helper()
	p, _ := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	if len(p) < 2 {
		t.Fatalf("want several shards in %s, got %v", dir, p)
	}
	return p
}

func TestOpenErrors(t *testing.T) {
	type setup func(t *testing.T, dir string)
	tiny := func(opt synth.Options) setup {
		return func(t *testing.T, dir string) {
			if _, err := synth.WriteTiny(dir, opt); err != nil {
				t.Fatal(err)
			}
		}
	}
	sharded := tiny(synth.Options{Bits: 4, ShardBytes: 200 << 10})
	editIndex := func(edit func(m map[string]string)) setup {
		return func(t *testing.T, dir string) {
			sharded(t, dir)
			p := filepath.Join(dir, "model.safetensors.index.json")
			var idx struct {
				Metadata  map[string]any    `json:"metadata"`
				WeightMap map[string]string `json:"weight_map"`
			}
			raw, _ := os.ReadFile(p)
			if err := json.Unmarshal(raw, &idx); err != nil {
				t.Fatal(err)
			}
			edit(idx.WeightMap)
			raw, _ = json.Marshal(idx)
			os.WriteFile(p, raw, 0o644)
		}
	}
	setConfig := func(edit func(m map[string]any)) setup {
		return func(t *testing.T, dir string) {
			tiny(synth.Options{Bits: 4})(t, dir)
			p := filepath.Join(dir, "config.json")
			var m map[string]any
			raw, _ := os.ReadFile(p)
			json.Unmarshal(raw, &m)
			edit(m)
			raw, _ = json.Marshal(m)
			os.WriteFile(p, raw, 0o644)
		}
	}
	cases := []struct {
		name  string
		setup setup
		want  string // substring; "{dir}" is replaced by the directory
	}{
		{"no config", func(t *testing.T, dir string) {}, "{dir}/config.json: no such file or directory"},
		{"config not json", func(t *testing.T, dir string) { writeConfig(t, dir, "{model_type") }, "{dir}/config.json: invalid JSON"},
		{"no weights", func(t *testing.T, dir string) { writeConfig(t, dir, `{"model_type":"gemma3n"}`) }, "model directory {dir}: no model.safetensors, model.safetensors.index.json or *.safetensors file"},
		{"bits 3", setConfig(func(m map[string]any) { m["quantization"] = map[string]any{"group_size": 64, "bits": 3} }),
			"{dir}/config.json: quantization bits 3 not supported (want 4 or 8)"},
		{"bits 3 in quantization_config", setConfig(func(m map[string]any) {
			delete(m, "quantization")
			m["quantization_config"] = map[string]any{"group_size": 64, "bits": 3}
		}), "{dir}/config.json: quantization bits 3 not supported (want 4 or 8)"},
		{"group 48", setConfig(func(m map[string]any) { m["quantization"] = map[string]any{"group_size": 48, "bits": 4} }),
			"quantization group_size 48 not supported (want 32, 64 or 128)"},
		{"override bits 2", setConfig(func(m map[string]any) {
			m["quantization"] = map[string]any{"group_size": 64, "bits": 4, vlm + "embed_tokens": map[string]any{"bits": 2}}
		}), "quantization " + vlm + "embed_tokens bits 2 not supported"},
		{"mode", setConfig(func(m map[string]any) {
			m["quantization"] = map[string]any{"group_size": 32, "bits": 4, "mode": "mxfp4"}
		}),
			`quantization mode "mxfp4" not supported (want affine)`},
		{"bits string", setConfig(func(m map[string]any) { m["quantization"] = map[string]any{"bits": "4"} }),
			`config.json: quantization.bits: want an integer, got string "4"`},
		{"eos wrong type", func(t *testing.T, dir string) {
			tiny(synth.Options{})(t, dir)
			os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id":"1"}`), 0o644)
		}, `{dir}/generation_config.json: eos_token_id: want a list of integers, got string "1"`},
		{"tokenizer config invalid", func(t *testing.T, dir string) {
			tiny(synth.Options{})(t, dir)
			os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{`), 0o644)
		}, "{dir}/tokenizer_config.json: invalid JSON"},
		{"truncated weights", func(t *testing.T, dir string) {
			tiny(synth.Options{Bits: 4})(t, dir)
			p := filepath.Join(dir, "model.safetensors")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-100)
		}, "run past the end of the data"},
		{"missing shard", func(t *testing.T, dir string) {
			sharded(t, dir)
			os.Remove(shards(t, dir)[1])
		}, ".safetensors listed in model.safetensors.index.json is missing"},
		{"index names absent tensor", editIndex(func(m map[string]string) { m["ghost.weight"] = m[vlm+"norm.weight"] }),
			`.safetensors: tensor "ghost.weight" listed in model.safetensors.index.json is missing`},
		{"index names wrong shard", editIndex(func(m map[string]string) {
			m[vlm+"norm.weight"] = m[vlm+"embed_tokens.weight"]
		}), `tensor "` + vlm + `norm.weight" is in model-0000`},
		{"index path escape", editIndex(func(m map[string]string) { m[vlm+"norm.weight"] = "../x.safetensors" }),
			"want a file name in the model directory"},
		// "." is the model directory itself: it was taken, and the load
		// then said only "{dir}: not a regular file" (QA, FuzzParseIndex).
		{"index names the directory", editIndex(func(m map[string]string) { m[vlm+"norm.weight"] = "." }),
			`{dir}/model.safetensors.index.json: weight_map["` + vlm + `norm.weight"]: want a file name in the model directory, got string "."`},
		{"duplicate across shards", func(t *testing.T, dir string) {
			specs := []synth.TensorSpec{{Name: "a", DType: tensor.F32, Shape: []int{2}}}
			if err := synth.WriteSafetensors(filepath.Join(dir, "x1.safetensors"), specs, nil, 1); err != nil {
				t.Fatal(err)
			}
			if err := synth.WriteSafetensors(filepath.Join(dir, "x2.safetensors"), specs, nil, 2); err != nil {
				t.Fatal(err)
			}
			writeConfig(t, dir, `{"model_type":"x"}`)
		}, `{dir}/x2.safetensors: tensor "a" is also in {dir}/x1.safetensors`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			c, err := checkpoint.Open(dir)
			if err == nil {
				c.Close()
				t.Fatalf("no error, want %q", tc.want)
			}
			want := strings.ReplaceAll(tc.want, "{dir}", dir)
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q\nwant one line containing %q", err, want)
			}
			// OpenHeaders runs the same checks without the data.
			if hc, herr := checkpoint.OpenHeaders(dir); herr == nil || herr.Error() != err.Error() {
				if hc != nil {
					hc.Close()
				}
				t.Fatalf("OpenHeaders: %v\nOpen:        %v\nwant the same error", herr, err)
			}
		})
	}
	if _, err := checkpoint.Open(filepath.Join(t.TempDir(), "absent")); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("absent dir: %v", err)
	}
}

// TestMatrixQuantRules checks how config overrides and .scales decide
// whether a module is quantized, and the errors when they disagree.
func TestMatrixQuantRules(t *testing.T) {
	d := synth.TinyGemma3n()
	q := vlm + "layers.0.self_attn.q_proj"
	cases := []struct {
		name  string
		quant map[string]any // quantization block; nil removes it
		path  string
		bits  int
		want  string
	}{
		{"default by scales", map[string]any{"group_size": 64, "bits": 4}, q, 4, ""},
		{"dense by missing scales", map[string]any{"group_size": 64, "bits": 4}, vlm + "layers.0.altup.prediction_coefs", 0, ""},
		{"override false but has scales", map[string]any{"group_size": 64, "bits": 4, q: false}, q, 0, "module has .scales but"},
		{"override wrong bits", map[string]any{"group_size": 64, "bits": 4, q: map[string]any{"bits": 8, "group_size": 64}}, q, 0, ".scales: got BF16[128 2], want BF16[128 1] (bits 8, group_size 64)"},
		{"override quantized without scales", map[string]any{"group_size": 64, "bits": 4, vlm + "norm": map[string]any{"bits": 4}}, vlm + "norm", 0, "missing " + vlm + "norm.scales"},
		{"wrong group", map[string]any{"group_size": 32, "bits": 4}, q, 0, ".scales: got BF16[128 2], want BF16[128 4]"},
		{"no quantization block", nil, q, 0, "has .scales but " + "{dir}/config.json has no quantization block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTiny(t, synth.Options{Bits: 4})
			p := filepath.Join(dir, "config.json")
			var m map[string]any
			raw, _ := os.ReadFile(p)
			json.Unmarshal(raw, &m)
			delete(m, "quantization_config")
			if tc.quant == nil {
				delete(m, "quantization")
			} else {
				m["quantization"] = tc.quant
			}
			raw, _ = json.Marshal(m)
			os.WriteFile(p, raw, 0o644)
			c := open(t, dir)
			mat, err := c.Matrix(tc.path)
			if tc.want != "" {
				want := strings.ReplaceAll(tc.want, "{dir}", dir)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mat.Bits != tc.bits {
				t.Fatalf("bits %d want %d", mat.Bits, tc.bits)
			}
		})
	}
	_ = d
}

// TestQuantizedValues checks that a quantized matrix read back dequantizes
// to the random weights synth drew (uniform in +-sqrt(3/in)).
func TestQuantizedValues(t *testing.T) {
	d := synth.TinyGemma3n()
	c := open(t, writeTiny(t, synth.Options{Bits: 8, GroupSize: 32, Seed: 5}))
	m, err := c.MatrixShape(vlm+"layers.3.mlp.down_proj", d.Hidden, d.Intermediate)
	if err != nil {
		t.Fatal(err)
	}
	if m.GroupSize != 32 || m.Bits != 8 {
		t.Fatalf("group %d bits %d", m.GroupSize, m.Bits)
	}
	scales, _ := m.Scales.ToF32()
	biases, _ := m.Biases.ToF32()
	words := m.W.U32()
	bound := math.Sqrt(3.0 / float64(d.Intermediate))
	var sum, sumSq float64
	for r := 0; r < m.Out; r++ {
		for i := 0; i < m.In; i++ {
			q := words[r*m.In/4+i/4] >> (8 * (i % 4)) & 0xff
			g := r*(m.In/32) + i/32
			w := float64(scales[g])*float64(q) + float64(biases[g])
			if math.IsNaN(w) || math.Abs(w) > bound*1.05 {
				t.Fatalf("w[%d,%d] = %v outside +-%v", r, i, w, bound)
			}
			sum += w
			sumSq += w * w
		}
	}
	n := float64(m.Out * m.In)
	if std := math.Sqrt(sumSq/n - (sum/n)*(sum/n)); math.Abs(std*math.Sqrt(float64(d.Intermediate))-1) > 0.05 {
		t.Fatalf("std %v, want about 1/sqrt(in)", std)
	}
}

// mapper records the regions a checkpoint offers and reads each one when it
// is unmapped, which faults if the file was unmapped first.
type mapper struct {
	mapped   map[uintptr]int
	unmapped int
	sum      byte
	failAt   int // MapWeights fails on this call (1-based); 0 never
	calls    int
}

func (m *mapper) MapWeights(r []byte) error {
	m.calls++
	if m.calls == m.failAt {
		return errors.New("no room")
	}
	m.mapped[uintptr(unsafePtr(r))] = len(r)
	return nil
}

func (m *mapper) UnmapWeights(r []byte) error {
	if _, ok := m.mapped[uintptr(unsafePtr(r))]; !ok {
		return errors.New("unmapping a region never mapped")
	}
	delete(m.mapped, uintptr(unsafePtr(r)))
	for _, b := range r { // faults if the file is already unmapped
		m.sum += b
	}
	m.unmapped++
	return nil
}

// TestMapWeights checks that a backend reading weights in place gets every
// shard's whole mapping and is told to let go of each before the shard is
// unmapped, and that a refusal undoes what was mapped.
func TestMapWeights(t *testing.T) {
	dir := writeTiny(t, synth.Options{Bits: 4, Seed: 9, ShardBytes: 200 << 10})
	c, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &mapper{mapped: map[uintptr]int{}}
	if err := c.MapWeights(m); err != nil {
		t.Fatal(err)
	}
	files := len(c.Files())
	if len(m.mapped) != files {
		t.Fatalf("%d regions mapped for %d files", len(m.mapped), files)
	}
	var total int64
	for _, n := range m.mapped {
		total += int64(n)
	}
	if total < c.TotalBytes() {
		t.Errorf("mapped %d bytes, less than the %d bytes of tensors", total, c.TotalBytes())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if m.unmapped != files || len(m.mapped) != 0 {
		t.Errorf("%d of %d regions unmapped before Close unmapped the files", m.unmapped, files)
	}

	c2 := open(t, dir)
	m2 := &mapper{mapped: map[uintptr]int{}, failAt: 2}
	if err := c2.MapWeights(m2); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("MapWeights with a refusing backend: %v", err)
	}
	if len(m2.mapped) != 0 {
		t.Errorf("%d regions left mapped after a refusal", len(m2.mapped))
	}
}

// reshape rewrites the safetensors header of the file holding tensor name
// so that the tensor has shape (same dtype and bytes: only the header
// changes).
func reshape(t *testing.T, dir, name string, shape []int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(raw[:8])
		var hdr map[string]json.RawMessage
		if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
			t.Fatal(err)
		}
		entry, ok := hdr[name]
		if !ok {
			continue
		}
		var info map[string]any
		if err := json.Unmarshal(entry, &info); err != nil {
			t.Fatal(err)
		}
		info["shape"] = shape
		if hdr[name], err = json.Marshal(info); err != nil {
			t.Fatal(err)
		}
		h, err := json.Marshal(hdr)
		if err != nil {
			t.Fatal(err)
		}
		for len(h)%8 != 0 {
			h = append(h, ' ')
		}
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		out = append(append(out, h...), raw[8+n:]...)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no safetensors file in %s holds %s", dir, name)
}

// TestMatrixShapeNamesTheWrongTensor: a weight with the right byte count
// but the wrong shape is named, with the shape expected and the one found,
// not blamed on its scales (which are right).
func TestMatrixShapeNamesTheWrongTensor(t *testing.T) {
	d := synth.TinyGemma3n()
	down := vlm + "layers.0.mlp.down_proj"
	for _, tc := range []struct {
		name  string
		bits  int
		shape []int
		want  string
	}{
		{"4-bit, rows and columns traded", 4, []int{d.Hidden * 2, d.Intermediate / 16},
			fmt.Sprintf(`tensor "%s.weight" has shape [%d %d], want [%d %d] (a %dx%d matrix packed 8 4-bit codes per U32)`,
				down, d.Hidden*2, d.Intermediate/16, d.Hidden, d.Intermediate/8, d.Hidden, d.Intermediate)},
		{"8-bit, transposed", 8, []int{d.Intermediate / 4, d.Hidden},
			fmt.Sprintf(`tensor "%s.weight" has shape [%d %d], want [%d %d] (a %dx%d matrix packed 4 8-bit codes per U32)`,
				down, d.Intermediate/4, d.Hidden, d.Hidden, d.Intermediate/4, d.Hidden, d.Intermediate)},
		{"dense, transposed", 0, []int{d.Intermediate, d.Hidden},
			fmt.Sprintf(`tensor "%s.weight" has shape [%d %d], want [%d %d]`, down, d.Intermediate, d.Hidden, d.Hidden, d.Intermediate)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTiny(t, synth.Options{Bits: tc.bits})
			reshape(t, dir, down+".weight", tc.shape)
			c := open(t, dir)
			_, err := c.MatrixShape(down, d.Hidden, d.Intermediate)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "scales") {
				t.Fatalf("error %v\nwant one naming the weight: %q", err, tc.want)
			}
		})
	}
}

// TestOpenHeaders: a checkpoint opened by OpenHeaders lists the same
// tensors with the same header entries as Open, checks shapes and dtypes
// the same way, but holds no data: tensors have none, Floats gives zeros,
// and there is nothing to map.
func TestOpenHeaders(t *testing.T) {
	d := synth.TinyGemma3n()
	for _, opt := range []synth.Options{{Bits: 4, Seed: 3}, {Seed: 3, ShardBytes: 200 << 10}} {
		dir := writeTiny(t, opt)
		full := open(t, dir)
		c, err := checkpoint.OpenHeaders(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if !c.HeadersOnly() || full.HeadersOnly() {
			t.Fatalf("HeadersOnly: %v for OpenHeaders, %v for Open", c.HeadersOnly(), full.HeadersOnly())
		}
		if !slices.Equal(c.Names(), full.Names()) || !slices.Equal(c.Files(), full.Files()) || c.TotalBytes() != full.TotalBytes() {
			t.Fatalf("OpenHeaders sees %d tensors in %v, Open %d in %v", len(c.Names()), c.Files(), len(full.Names()), full.Files())
		}
		for _, n := range c.Names() {
			hi, _ := c.Info(n)
			fi, _ := full.Info(n)
			if !slices.Equal(hi.Shape, fi.Shape) || hi.RawDType != fi.RawDType || hi.Begin != fi.Begin || hi.End != fi.End {
				t.Fatalf("%s: OpenHeaders %+v, Open %+v", n, hi, fi)
			}
		}
		down := vlm + "layers.0.mlp.down_proj"
		m, err := c.MatrixShape(down, d.Hidden, d.Intermediate)
		if err != nil {
			t.Fatal(err)
		}
		if m.W.Data != nil || m.Bits != opt.Bits {
			t.Fatalf("matrix %s: bits %d, %d data bytes", down, m.Bits, len(m.W.Data))
		}
		if _, err := c.MatrixShape(down, d.Intermediate, d.Hidden); err == nil || !strings.Contains(err.Error(), "has shape") {
			t.Fatalf("transposed %s: %v, want a shape error", down, err)
		}
		vals, err := c.Floats(vlm+"norm.weight", d.Hidden)
		if err != nil || len(vals) != d.Hidden || slices.ContainsFunc(vals, func(v float32) bool { return v != 0 }) {
			t.Fatalf("Floats: %d values %v", len(vals), err)
		}
		if want, err := full.Floats(vlm+"norm.weight", d.Hidden); err != nil || !slices.ContainsFunc(want, func(v float32) bool { return v != 0 }) {
			t.Fatalf("Open's Floats: %v (all zero?)", err)
		}
		if _, err := c.Floats(vlm+"norm.weight", d.Hidden+1); err == nil {
			t.Fatal("Floats with a wrong shape: no error")
		}
		if err := c.MapWeights(&mapper{}); err == nil || !strings.Contains(err.Error(), "only the weights' headers were read") {
			t.Fatalf("MapWeights: %v", err)
		}
	}
}
