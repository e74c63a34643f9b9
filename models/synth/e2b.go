package synth

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// e2bParamsJSON lists every parameter of Gemma3nForConditionalGeneration
// for E2B, as transformers 5.17 names and shapes them (torch layout), with
// the config used. Made by testdata/list_params.py on the meta device.
//
//go:embed testdata/gemma3n_e2b_params.json
var e2bParamsJSON []byte

// HFParam is one parameter of the transformers model.
type HFParam struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
	Kind  string `json:"kind"` // "param", or "buffer" for persistent non-parameters (the tied lm_head)
}

// E2BParams is the decoded testdata/gemma3n_e2b_params.json.
type E2BParams struct {
	Transformers string         `json:"transformers"`
	Notes        []string       `json:"notes"`
	Config       map[string]any `json:"config"`
	Tensors      []HFParam      `json:"tensors"`
	TotalElems   json.Number    `json:"total_elements"`
}

// LoadE2BParams decodes the embedded E2B parameter list.
func LoadE2BParams() (*E2BParams, error) {
	var p E2BParams
	if err := json.Unmarshal(e2bParamsJSON, &p); err != nil {
		return nil, fmt.Errorf("synth: testdata/gemma3n_e2b_params.json: %w", err)
	}
	if len(p.Tensors) == 0 || p.Config == nil {
		return nil, fmt.Errorf("synth: testdata/gemma3n_e2b_params.json: no tensors or config")
	}
	return &p, nil
}

// MLXVLMShape returns the shape mlx-vlm stores for a transformers tensor:
// convolution kernels move their input-channel axis last (vision: 4-D conv
// and projection kernels [O,I,kh,kw] -> [O,kh,kw,I]; audio: conv.weight
// likewise, conv1d.weight [O,I,k] -> [O,k,I]); everything else is kept.
func MLXVLMShape(mlxName string, shape []int) []int {
	s := append([]int(nil), shape...)
	switch {
	case strings.HasPrefix(mlxName, "vision_tower.") && len(s) == 4 &&
		((strings.Contains(mlxName, "conv") && strings.Contains(mlxName, "weight")) || strings.Contains(mlxName, "proj.weight")):
		return []int{s[0], s[2], s[3], s[1]}
	case strings.HasPrefix(mlxName, "audio_tower.") && len(s) == 4 && strings.Contains(mlxName, "conv.weight"):
		return []int{s[0], s[2], s[3], s[1]}
	case strings.HasPrefix(mlxName, "audio_tower.") && len(s) == 3 && strings.Contains(mlxName, "conv1d.weight"):
		return []int{s[0], s[2], s[1]}
	}
	return s
}

// towerSpecs adds the vision and audio towers (dense, as mlx-vlm never
// quantizes them) and the two multimodal embedders (whose embedding and
// projection are quantized like the text model), and puts the towers'
// configuration into cfg.
func (b *builder) towerSpecs(cfg map[string]any) error {
	p, err := LoadE2BParams()
	if err != nil {
		return err
	}
	for _, t := range p.Tensors {
		name, ok := hfToMLXVLM(t.Name)
		if !ok || strings.HasPrefix(name, "language_model.") {
			continue
		}
		shape := MLXVLMShape(name, t.Shape)
		isEmbedder := strings.HasPrefix(name, "embed_vision.") || strings.HasPrefix(name, "embed_audio.")
		if isEmbedder && len(shape) == 2 && strings.HasSuffix(name, ".weight") {
			if err := b.matrix(strings.TrimSuffix(name, ".weight"), shape[0], shape[1]); err != nil {
				return err
			}
			continue
		}
		center, spread := towerFill(name, shape)
		b.vector(name, center, spread, shape...)
	}
	for _, k := range []string{"vision_config", "audio_config"} {
		sub, ok := p.Config[k].(map[string]any)
		if !ok {
			return fmt.Errorf("synth: testdata/gemma3n_e2b_params.json: config has no %s", k)
		}
		clean := map[string]any{}
		for kk, v := range sub {
			switch kk {
			case "label_names", "id2label", "label2id", "num_classes", "_name_or_path":
				continue
			}
			clean[kk] = v
		}
		cfg[k] = clean
	}
	for _, k := range []string{"audio_soft_tokens_per_image", "vision_soft_tokens_per_image", "boi_token_id",
		"eoi_token_id", "image_token_id", "boa_token_id", "eoa_token_id", "audio_token_id"} {
		if v, ok := p.Config[k]; ok {
			cfg[k] = v
		}
	}
	return nil
}

// towerFill picks a value range: normalisation scales near 1, other vectors
// near 0, kernels uniform with unit-variance-preserving bounds.
func towerFill(name string, shape []int) (center, spread float32) {
	if len(shape) == 1 {
		if strings.Contains(name, "norm") || strings.Contains(name, ".bn") {
			return 1, 0.1
		}
		return 0, 0.02
	}
	fanIn := 1
	for _, d := range shape[1:] {
		fanIn *= d
	}
	return 0, float32(math.Sqrt(3 / float64(max(fanIn, 1))))
}
