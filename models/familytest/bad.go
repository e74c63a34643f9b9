package familytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mlxchat/models/checkpoint"
	"mlxchat/models/synth"
)

// Delete as a BadCase config value removes the key.
const Delete = "<delete>"

// BadCase breaks a copy of a good checkpoint in one way: config.json keys
// set (dotted paths; Delete removes one), a tensor dropped, or a tensor
// given one row less. Want must appear in the error.
type BadCase struct {
	Name   string
	Config map[string]any
	Drop   string
	Shrink string
	Want   string
}

// CheckBad loads a broken copy of the checkpoint in src for every case
// and requires a one-line error that contains the case's Want (the key or
// tensor at fault), never a panic or a successful load.
func CheckBad(t *testing.T, src string, load func(dir string) error, cases []BadCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			dir := t.TempDir()
			copyCheckpoint(t, src, dir, tc)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("load panicked: %v", r)
					}
				}()
				err = load(dir)
			}()
			switch {
			case err == nil:
				t.Fatalf("loaded a checkpoint that should fail (want an error naming %q)", tc.Want)
			case strings.Contains(err.Error(), "\n"):
				t.Errorf("error is not one line: %q", err)
			case !strings.Contains(err.Error(), tc.Want):
				t.Errorf("error %q does not name %q", err, tc.Want)
			default:
				t.Log(err)
			}
		})
	}
}

func copyCheckpoint(t *testing.T, src, dst string, tc BadCase) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for key, v := range tc.Config {
		parts := strings.Split(key, ".")
		m := cfg
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		if v == Delete {
			delete(m, parts[len(parts)-1])
		} else {
			m[parts[len(parts)-1]] = v
		}
	}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if gen, err := os.ReadFile(filepath.Join(src, "generation_config.json")); err == nil {
		if err := os.WriteFile(filepath.Join(dst, "generation_config.json"), gen, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := checkpoint.OpenSafetensors(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var specs []synth.TensorSpec
	found := tc.Drop == "" && tc.Shrink == ""
	for _, info := range f.Tensors {
		if info.Name == tc.Drop {
			found = true
			continue
		}
		data, err := f.Data(info)
		if err != nil {
			t.Fatal(err)
		}
		shape := append([]int(nil), info.Shape...)
		if info.Name == tc.Shrink {
			found = true
			row := len(data) / shape[0]
			shape[0]--
			data = data[:len(data)-row]
		}
		specs = append(specs, synth.TensorSpec{Name: info.Name, DType: info.DType, Shape: shape, Data: append([]byte(nil), data...)})
	}
	if !found {
		t.Fatalf("%s has no tensor %q%q", src, tc.Drop, tc.Shrink)
	}
	if err := synth.WriteSafetensors(filepath.Join(dst, "model.safetensors"), specs, map[string]string{"format": "mlx"}, 0); err != nil {
		t.Fatal(err)
	}
}
