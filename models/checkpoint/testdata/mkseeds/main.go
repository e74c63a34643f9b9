// Command mkseeds writes the seed corpora of models/checkpoint's fuzz
// targets into testdata/fuzz: headers and config.json files of synthetic
// tiny and E2B Gemma 3n checkpoints (models/synth), plus hostile variants
// of them.
//
//	go run ./models/checkpoint/testdata/mkseeds
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"mlxchat/models/synth"
)

const out = "models/checkpoint/testdata/fuzz"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mkseeds:", err)
		os.Exit(1)
	}
}

// seed writes one corpus entry in the format of `go test -fuzz`.
func seed(target, name string, data []byte) error {
	dir := filepath.Join(out, target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	return os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
}

func run() error {
	tmp, err := os.MkdirTemp("", "mkseeds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	variants := []struct {
		name string
		opt  synth.Options
	}{
		{"tiny-q4", synth.Options{Bits: 4, GroupSize: 64, Seed: 1}},
		{"tiny-dense", synth.Options{Seed: 1}},
		{"tiny-q8-mlxlm", synth.Options{Bits: 8, GroupSize: 32, Seed: 1, Naming: synth.NamingMLXLM}},
	}
	for _, v := range variants {
		dir := filepath.Join(tmp, v.name)
		if _, err := synth.WriteTiny(dir, v.opt); err != nil {
			return err
		}
		cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			return err
		}
		if err := seed("FuzzConfig", v.name, cfg); err != nil {
			return err
		}
		st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			return err
		}
		small, err := smallTensors(st, 8)
		if err != nil {
			return err
		}
		if err := seed("FuzzSafetensorsHeader", v.name+"-head", small); err != nil {
			return err
		}
	}
	// The E2B text configuration with a quantization block that has
	// per-module overrides, as mlx-community uploads carry.
	e2b := map[string]any{
		"model_type": "gemma3n", "text_config": synth.E2BGemma3n().TextConfig(),
		"eos_token_id": []int{1, 106}, "bos_token_id": 2,
		"quantization": map[string]any{"group_size": 64, "bits": 4,
			"language_model.model.embed_tokens": map[string]any{"group_size": 32, "bits": 8},
			"vision_tower.x":                    false},
	}
	b, err := json.Marshal(e2b)
	if err != nil {
		return err
	}
	if err := seed("FuzzConfig", "e2b-q4-overrides", b); err != nil {
		return err
	}
	hostile := map[string]string{
		"layers-negative": `{"model_type":"gemma3n","text_config":{"num_hidden_layers":-1,"vocab_size":512}}`,
		"layers-huge":     `{"model_type":"gemma3n","text_config":{"num_hidden_layers":4000000000}}`,
		"deep-nesting":    `{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"num_hidden_layers":1}}}}}}}}`,
		"eos-mixed":       `{"eos_token_id":[1,"2",null,-7,1e400]}`,
		"quant-bad":       `{"quantization":{"bits":3,"group_size":-64,"m":{"bits":"4"}}}`,
	}
	for name, s := range hostile {
		if err := seed("FuzzConfig", name, []byte(s)); err != nil {
			return err
		}
	}
	return nil
}

// smallTensors rewrites a safetensors file to hold only its n smallest
// tensors, packed from offset 0, so the seed stays small and valid.
func smallTensors(file []byte, n int) ([]byte, error) {
	hl := binary.LittleEndian.Uint64(file[:8])
	data := file[8+hl:]
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(file[8:8+hl], &hdr); err != nil {
		return nil, err
	}
	type entry struct {
		DType       string   `json:"dtype"`
		Shape       []int    `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
		name        string
	}
	var es []entry
	for k, v := range hdr {
		if k == "__metadata__" {
			continue
		}
		var e entry
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, err
		}
		e.name = k
		es = append(es, e)
	}
	size := func(e entry) int64 { return e.DataOffsets[1] - e.DataOffsets[0] }
	sort.Slice(es, func(i, j int) bool {
		if size(es[i]) != size(es[j]) {
			return size(es[i]) < size(es[j])
		}
		return es[i].name < es[j].name
	})
	es = es[:min(n, len(es))]
	keep := map[string]any{}
	if m, ok := hdr["__metadata__"]; ok {
		keep["__metadata__"] = m
	}
	var body bytes.Buffer
	for _, e := range es {
		at := int64(body.Len())
		body.Write(data[e.DataOffsets[0]:e.DataOffsets[1]])
		keep[e.name] = map[string]any{"dtype": e.DType, "shape": e.Shape, "data_offsets": []int64{at, int64(body.Len())}}
	}
	h, err := json.Marshal(keep)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	buf.Write(body.Bytes())
	return buf.Bytes(), nil
}
