package checkpoint

import (
	"slices"
	"strings"
	"testing"
)

const sampleConfig = `{
  "model_type": "gemma3n",
  "eos_token_id": [1, 106],
  "text_config": {
    "hidden_size": 2048,
    "rms_norm_eps": 1e-06,
    "intermediate_size": [8192, 8192, 8192],
    "head_dim": 256.0,
    "layer_types": ["sliding_attention", "full_attention"],
    "final_logit_softcapping": null,
    "tie_word_embeddings": true,
    "sliding_window": "512"
  },
  "quantization": {"group_size": 64, "bits": 4,
    "language_model.model.embed_tokens": {"group_size": 32, "bits": 8},
    "vision_tower.x": false}
}`

func TestConfigAccessors(t *testing.T) {
	c, err := ParseConfig("m/config.json", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Text()
	if tc == c {
		t.Fatal("Text() did not descend into text_config")
	}
	cases := []struct {
		name string
		get  func() (any, error)
		want any    // when err is ""
		err  string // substring of the error
	}{
		{"int", func() (any, error) { return tc.Int("hidden_size") }, 2048, ""},
		{"int from float", func() (any, error) { return tc.Int("head_dim") }, 256, ""},
		{"int dotted", func() (any, error) { return c.Int("text_config.hidden_size") }, 2048, ""},
		{"int missing", func() (any, error) { return tc.Int("num_hidden_layers") }, nil, "m/config.json: missing text_config.num_hidden_layers"},
		{"int wrong type", func() (any, error) { return tc.Int("sliding_window") }, nil, `m/config.json: text_config.sliding_window: want an integer, got string "512"`},
		{"int fractional", func() (any, error) { return tc.Int("rms_norm_eps") }, nil, "want an integer, got number 1e-06"},
		{"int or default", func() (any, error) { return tc.IntOr("num_kv_shared_layers", 10) }, 10, ""},
		{"int or null", func() (any, error) { return tc.IntOr("final_logit_softcapping", 7) }, 7, ""},
		{"float", func() (any, error) { return tc.Float("rms_norm_eps") }, 1e-6, ""},
		{"float or", func() (any, error) { return tc.FloatOr("rope_theta", 1e6) }, 1e6, ""},
		{"float wrong", func() (any, error) { return tc.Float("layer_types") }, nil, "want a number, got list of 2"},
		{"bool", func() (any, error) { return tc.Bool("tie_word_embeddings") }, true, ""},
		{"bool or", func() (any, error) { return tc.BoolOr("attention_bias", false) }, false, ""},
		{"string", func() (any, error) { return c.String("model_type") }, "gemma3n", ""},
		{"string or", func() (any, error) { return c.StringOr("hidden_activation", "gelu") }, "gelu", ""},
		{"string wrong", func() (any, error) { return tc.String("hidden_size") }, nil, "want a string, got number 2048"},
		{"ints scalar", func() (any, error) { return tc.Ints("hidden_size") }, []int{2048}, ""},
		{"int list repeat", func() (any, error) { return tc.IntList("hidden_size", 3) }, []int{2048, 2048, 2048}, ""},
		{"int list exact", func() (any, error) { return tc.IntList("intermediate_size", 3) }, []int{8192, 8192, 8192}, ""},
		{"int list length", func() (any, error) { return tc.IntList("intermediate_size", 30) }, nil, "text_config.intermediate_size: want 30 values, got 3"},
		{"ints element", func() (any, error) { return tc.Ints("layer_types") }, nil, `text_config.layer_types[0]: want an integer, got string "sliding_attention"`},
		{"floats", func() (any, error) { return tc.Floats("intermediate_size") }, []float64{8192, 8192, 8192}, ""},
		{"strings", func() (any, error) { return tc.Strings("layer_types") }, []string{"sliding_attention", "full_attention"}, ""},
		{"eos list", func() (any, error) { return c.EOSTokenIDs("eos_token_id") }, []int{1, 106}, ""},
		{"eos absent", func() (any, error) { return tc.EOSTokenIDs("eos_token_id") }, []int(nil), ""},
		{"sub wrong", func() (any, error) { return c.Sub("model_type") }, nil, "model_type: want an object"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch w := tt.want.(type) {
			case []int:
				if !slices.Equal(got.([]int), w) {
					t.Fatalf("got %v want %v", got, w)
				}
			case []float64:
				if !slices.Equal(got.([]float64), w) {
					t.Fatalf("got %v want %v", got, w)
				}
			case []string:
				if !slices.Equal(got.([]string), w) {
					t.Fatalf("got %v want %v", got, w)
				}
			default:
				if got != tt.want {
					t.Fatalf("got %v (%T) want %v", got, got, tt.want)
				}
			}
		})
	}
}

func TestQuantizationOverrides(t *testing.T) {
	c, err := ParseConfig("config.json", []byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuantization(c)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path              string
		p                 QuantParams
		quantized, explic bool
	}{
		{"language_model.model.layers.0.mlp.up_proj", QuantParams{4, 64}, true, false},
		{"language_model.model.embed_tokens", QuantParams{8, 32}, true, true},
		{"vision_tower.x", QuantParams{}, false, true},
	}
	for _, tc := range cases {
		p, quantized, explicit := q.For(tc.path)
		if p != tc.p || quantized != tc.quantized || explicit != tc.explic {
			t.Errorf("%s: got %+v %v %v want %+v %v %v", tc.path, p, quantized, explicit, tc.p, tc.quantized, tc.explic)
		}
	}
	if got := q.OverridePaths(); !slices.Equal(got, []string{"language_model.model.embed_tokens", "vision_tower.x"}) {
		t.Fatalf("override paths %v", got)
	}
	var none *Quantization
	if _, quantized, _ := none.For("x"); quantized {
		t.Fatal("nil quantization quantizes")
	}
	// Absent block: nil, no error.
	c2, _ := ParseConfig("config.json", []byte(`{"model_type":"x"}`))
	if q, err := ParseQuantization(c2); q != nil || err != nil {
		t.Fatalf("absent block: %v %v", q, err)
	}
}

func TestUnknownModelType(t *testing.T) {
	c, _ := ParseConfig("/m/config.json", []byte(`{"model_type":"llama4"}`))
	err := UnknownModelType(c, []string{"gemma3n_text", "gemma3n"})
	if err == nil || err.Error() != `/m/config.json: model_type "llama4" not supported (known: gemma3n, gemma3n_text)` {
		t.Fatalf("got %v", err)
	}
	c, _ = ParseConfig("/m/config.json", []byte(`{}`))
	if err := UnknownModelType(c, nil); err == nil || err.Error() != "/m/config.json: missing model_type" {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseConfig("/m/config.json", []byte(`null`)); err == nil {
		t.Fatal("null config accepted")
	}
}
