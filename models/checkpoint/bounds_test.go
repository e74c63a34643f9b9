package checkpoint

import (
	"slices"
	"strings"
	"testing"
)

func TestBoundedAccessors(t *testing.T) {
	c, err := ParseConfig("m/config.json", []byte(`{
  "text_config": {"num_hidden_layers": -1, "vocab_size": 4000000000, "hidden_size": 2048,
    "head_dim": 256, "intermediate_size": [8192, -3], "sliding_window": 512,
    "rope_theta": 0, "rms_norm_eps": 1e-6, "eos_token_id": [1, 4000000000],
    "max_position_embeddings": 32768, "custom": 7},
  "eos_token_id": -1
}`))
	if err != nil {
		t.Fatal(err)
	}
	tc := c.Text()
	cases := []struct {
		name string
		get  func() (any, error)
		want any
		err  string // substring of the error; "" = success
	}{
		{"negative layers", func() (any, error) { return tc.Size("num_hidden_layers") }, nil,
			"m/config.json: text_config.num_hidden_layers = -1 out of range (want 1 to 1024)"},
		{"huge vocab", func() (any, error) { return tc.Size("vocab_size") }, nil,
			"m/config.json: text_config.vocab_size = 4000000000 out of range (want 1 to 16777216)"},
		{"dotted key", func() (any, error) { return c.Size("text_config.hidden_size") }, 2048, ""},
		{"in range", func() (any, error) { return tc.Size("head_dim") }, 256, ""},
		{"size or default", func() (any, error) { return tc.SizeOr("num_key_value_heads", 8) }, 8, ""},
		{"size or checks", func() (any, error) { return tc.SizeOr("num_hidden_layers", 8) }, nil, "num_hidden_layers = -1 out of range"},
		{"unknown size key", func() (any, error) { return tc.Size("custom") }, nil, "text_config.custom: no known range"},
		{"int in", func() (any, error) { return tc.IntIn("custom", Range{0, 7}) }, 7, ""},
		{"int in above", func() (any, error) { return tc.IntIn("custom", Range{0, 6}) }, nil, "text_config.custom = 7 out of range (want 0 to 6)"},
		{"int in missing", func() (any, error) { return tc.IntIn("nope", Range{0, 6}) }, nil, "missing text_config.nope"},
		{"int in or", func() (any, error) { return tc.IntInOr("nope", 3, Range{0, 6}) }, 3, ""},
		{"list entry", func() (any, error) { return tc.IntsIn("intermediate_size", Range{1, MaxIntermediate}) }, nil,
			"text_config.intermediate_size[1] = -3 out of range"},
		{"scalar as list", func() (any, error) { return tc.IntsIn("sliding_window", Range{1, 100}) }, nil,
			"text_config.sliding_window = 512 out of range (want 1 to 100)"},
		{"float in", func() (any, error) { return tc.FloatIn("rms_norm_eps", 0, 1) }, 1e-6, ""},
		{"float out", func() (any, error) { return tc.FloatInOr("rope_theta", 1e4, 1, 1e15) }, nil,
			"text_config.rope_theta = 0 out of range (want 1 to 1e+15)"},
		{"float or", func() (any, error) { return tc.FloatInOr("rope_local_base_freq", 1e4, 1, 1e15) }, 1e4, ""},
		{"eos ids", func() (any, error) { return tc.EOSTokenIDs("eos_token_id") }, nil,
			"text_config.eos_token_id[1] = 4000000000 out of range"},
		{"negative eos", func() (any, error) { return c.EOSTokenIDs("eos_token_id") }, nil, "eos_token_id = -1 out of range"},
		{"negative count", func() (any, error) { return tc.IntList("hidden_size", -1) }, nil, "want a count of values, got -1"},
	}
	for _, tc := range cases {
		got, err := tc.get()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, %v; want error containing %q", tc.name, got, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error is not one line: %q", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSizeRanges(t *testing.T) {
	for _, k := range SizeKeys() {
		r, ok := SizeRange("text_config." + k)
		if !ok || r.Min > r.Max || r.Min < 0 {
			t.Errorf("%s: range %v, %v", k, r, ok)
		}
	}
	if _, ok := SizeRange("rope_theta"); ok {
		t.Error("rope_theta is not a size key")
	}
	if !slices.Contains(SizeKeys(), "num_hidden_layers") {
		t.Error("num_hidden_layers missing from SizeKeys")
	}
}
