package checkpoint

import (
	"sort"
	"strings"
	"testing"

	"mlxchat/tensor"
)

// The seed corpora of these targets are in testdata/fuzz/<Target>/ (real
// headers and configurations of the tiny and E2B synthetic checkpoints and
// hand-written hostile ones); `go test -fuzz=<Target>` extends them.

// FuzzSafetensorsHeader feeds arbitrary bytes to the header parser as a
// whole file: it must never panic, and every header it accepts must
// describe tensors that lie inside the data, do not overlap and whose
// bytes agree with dtype and shape, so reading them cannot go out of
// bounds.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(okFile(`{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}`, 24))
	f.Add(okFile(`{"__metadata__":{"format":"mlx"},"w":{"dtype":"U32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0,4],"data_offsets":[8,8]}}`, 8))
	f.Add(rawFile(`{}`, 1<<62, 0))
	f.Fuzz(func(t *testing.T, file []byte) {
		tensors, _, dataStart, err := ParseSafetensorsHeader("f.safetensors", file, int64(len(file)))
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "f.safetensors: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error is not one line naming the file: %q", msg)
			}
			return
		}
		data := file[dataStart:]
		var prevEnd int64
		for i, ti := range tensors {
			if ti.Begin < 0 || ti.End < ti.Begin || ti.End > int64(len(data)) {
				t.Fatalf("tensor %q [%d %d] outside %d data bytes", ti.Name, ti.Begin, ti.End, len(data))
			}
			if i > 0 && ti.Begin < prevEnd && ti.Begin != ti.End {
				t.Fatalf("tensor %q overlaps the one before", ti.Name)
			}
			if ti.End > prevEnd {
				prevEnd = ti.End
			}
			if ti.DType == tensor.Invalid {
				continue
			}
			n := int64(ti.DType.Size())
			for _, d := range ti.Shape {
				n *= int64(d)
			}
			if n != ti.Bytes() {
				t.Fatalf("tensor %q: %s%v is %d bytes, entry spans %d", ti.Name, ti.DType, ti.Shape, n, ti.Bytes())
			}
			if _, err := tensor.FromBytes(ti.DType, ti.Shape, data[ti.Begin:ti.End:ti.End]); err != nil {
				// A shape the tensor package refuses is reported, not a crash.
				continue
			}
		}
		if !sort.SliceIsSorted(tensors, func(i, j int) bool { return tensors[i].Begin < tensors[j].Begin }) {
			t.Fatal("tensors not sorted by offset")
		}
	})
}

// FuzzConfig parses arbitrary bytes as config.json and reads every key
// through every accessor (and the quantization block): nothing may panic
// or allocate from an unchecked size, and errors are one line naming the
// file.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(`{"model_type":"gemma3n","text_config":{"num_hidden_layers":-1,"intermediate_size":[1,2]},"quantization":{"bits":4,"group_size":64,"m.x":false}}`))
	f.Add([]byte(`{"num_hidden_layers":4000000000,"vocab_size":1e300,"eos_token_id":[1,-7]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("m/config.json", data)
		if err != nil {
			checkErr(t, err)
			return
		}
		_, err = ParseQuantization(c)
		checkErr(t, err)
		_, err = c.ModelType()
		checkErr(t, err)
		visit(t, c, 0)
		visit(t, c.Text(), 0)
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "m/config.json: ") || strings.Contains(msg, "\n") {
		t.Fatalf("error is not one line naming the file: %q", msg)
	}
}

// visit reads every key of c through every accessor, descending into
// nested objects.
func visit(t *testing.T, c *Config, depth int) {
	if depth > 4 {
		return
	}
	for _, k := range c.Keys() {
		if strings.Contains(k, ".") {
			continue // a dotted path would address nested objects instead
		}
		for _, get := range []func() error{
			func() error { _, err := c.Int(k); return err },
			func() error { _, err := c.Float(k); return err },
			func() error { _, err := c.String(k); return err },
			func() error { _, err := c.Bool(k); return err },
			func() error { _, err := c.Ints(k); return err },
			func() error { _, err := c.Floats(k); return err },
			func() error { _, err := c.Strings(k); return err },
			func() error { _, err := c.IntList(k, 3); return err },
			func() error { _, err := c.IntIn(k, Range{0, 100}); return err },
			func() error { _, err := c.IntsIn(k, Range{1, MaxLayers}); return err },
			func() error { _, err := c.FloatIn(k, 0, 1); return err },
			func() error { _, err := c.EOSTokenIDs(k); return err },
		} {
			checkErr(t, get())
		}
		if r, known := SizeRange(k); known {
			n, err := c.Size(k)
			checkErr(t, err)
			if err == nil && !r.Contains(n) {
				t.Fatalf("Size(%s) = %d outside %v", k, n, r)
			}
		}
		if sub, err := c.Sub(k); err == nil {
			visit(t, sub, depth+1)
		} else {
			checkErr(t, err)
		}
	}
}
