package blocks

import (
	"math"
	"slices"
	"strings"
	"testing"

	"mlxchat/models/checkpoint"
)

func cfgOf(t *testing.T, js string) *checkpoint.Config {
	t.Helper()
	c, err := checkpoint.ParseConfig("config.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLlama3Bands checks the llama3 table of Llama 3.1 8B (head_dim 128,
// base 5e5, factor 8, original context 8192, frequency factors 1 and 4)
// pair by pair against the three bands worked out here: pairs 0-28 keep
// their frequency (wavelength under 8192/4), 35-63 are divided by 8
// (wavelength over 8192), and 29-34 blend the two.
func TestLlama3Bands(t *testing.T) {
	s := RopeSpec{Theta: 500000, Scaling: RopeScaling{Type: RopeLlama3, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMax: 8192}}
	inv, af, err := s.InvFreq(128)
	if err != nil || af != 1 || len(inv) != 64 {
		t.Fatalf("inv %d, af %g, err %v", len(inv), af, err)
	}
	var kept, blended, divided []int
	for i, got := range inv {
		base := math.Pow(500000, -float64(2*i)/128)
		wave := 2 * math.Pi / base
		var want float64
		switch {
		case wave < 8192.0/4:
			want, kept = base, append(kept, i)
		case wave > 8192:
			want, divided = base/8, append(divided, i)
		default:
			sm := (8192/wave - 1) / 3
			want, blended = (1-sm)*base/8+sm*base, append(blended, i)
		}
		if math.Abs(float64(got)-want) > 1e-6*want {
			t.Errorf("pair %d: %g, want %g", i, got, want)
		}
	}
	if len(kept) != 29 || len(divided) != 29 || !slices.Equal(blended, []int{29, 30, 31, 32, 33, 34}) {
		t.Errorf("bands: %d kept, blended %v, %d divided", len(kept), blended, len(divided))
	}
}

// TestYarnOLMo3 checks YaRN for OLMo 3 7B (head_dim 128, base 5e5, factor
// 8, original 8192, beta 32/1): the ramp runs over pairs 18..35, below it
// the frequencies are kept, above it divided by 8, and the default
// attention factor is 0.1·ln 8 + 1.
func TestYarnOLMo3(t *testing.T) {
	sc := RopeScaling{Type: RopeYarn, Factor: 8, OriginalMax: 8192, BetaFast: 32, BetaSlow: 1}
	lo, hi := YarnRange(128, 500000, sc)
	if lo != 18 || hi != 35 {
		t.Fatalf("correction range [%g, %g], want [18, 35]", lo, hi)
	}
	inv, af, err := RopeSpec{Theta: 500000, Scaling: sc}.InvFreq(128)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(af-(0.1*math.Log(8)+1)) > 1e-12 {
		t.Errorf("attention factor %g", af)
	}
	for i, got := range inv {
		base := math.Pow(500000, -float64(2*i)/128)
		ramp := min(max((float64(i)-18)/17, 0), 1)
		want := ramp*base/8 + (1-ramp)*base
		if math.Abs(float64(got)-want) > 1e-6*want {
			t.Errorf("pair %d: %g, want %g", i, got, want)
		}
	}
	if float64(inv[10]) != float64(float32(math.Pow(500000, -20.0/128))) {
		t.Errorf("pair 10 should be unscaled")
	}
}

func TestReadRope(t *testing.T) {
	for _, tc := range []struct {
		name, js  string
		full, sld RopeSpec
		flatKey   string
	}{
		{"defaults", `{}`, RopeSpec{Theta: 10000}, RopeSpec{Theta: 10000}, "rope_theta"},
		{"legacy type key", `{"rope_theta": 5e5, "rope_scaling": {"type": "linear", "factor": 4}}`,
			RopeSpec{Theta: 5e5, Scaling: RopeScaling{Type: RopeLinear, Factor: 4}}, RopeSpec{Theta: 5e5, Scaling: RopeScaling{Type: RopeLinear, Factor: 4}}, "rope_scaling"},
		{"flat rope_parameters", `{"rope_theta": 1, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}`,
			RopeSpec{Theta: 1e6, Scaling: RopeScaling{Type: RopeDefault}}, RopeSpec{Theta: 1e6, Scaling: RopeScaling{Type: RopeDefault}}, "rope_parameters"},
		{"per type", `{"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2, "rope_theta": 1e6},
			"sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}`,
			RopeSpec{Theta: 1e6, Scaling: RopeScaling{Type: RopeYarn, Factor: 2, OriginalMax: 4096, BetaFast: 32, BetaSlow: 1, AttentionFactor: 0.1*math.Log(2) + 1}},
			RopeSpec{Theta: 1e4, Scaling: RopeScaling{Type: RopeDefault}}, "rope_theta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadRope(cfgOf(t, tc.js), 10000)
			if err != nil {
				t.Fatal(err)
			}
			if f, s := r.For(FullAttention), r.For(SlidingAttention); f != tc.full || s != tc.sld || r.FlatKey != tc.flatKey {
				t.Errorf("full %+v sliding %+v (%s), want %+v %+v (%s)", f, s, r.FlatKey, tc.full, tc.sld, tc.flatKey)
			}
		})
	}
	if _, err := ReadRope(cfgOf(t, `{"rope_scaling": {"rope_type": "longrope", "factor": 2}}`), 1e4); err == nil || !strings.Contains(err.Error(), "rope_scaling.rope_type") {
		t.Errorf("longrope: %v", err)
	}
}

func TestSlidingLayers(t *testing.T) {
	for _, tc := range []struct {
		js      string
		key     string
		def     int
		want    []bool
		wantErr string
	}{
		{`{}`, "sliding_window_pattern", 3, []bool{true, true, false, true, true, false}, ""},
		{`{"sliding_window_pattern": 2}`, "sliding_window_pattern", 6, []bool{true, false, true, false, true, false}, ""},
		{`{"sliding_window_pattern": 2}`, "", 0, []bool{false, false, false, false, false, false}, ""},
		{`{"layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention", "full_attention", "sliding_attention"], "sliding_window_pattern": 2}`,
			"sliding_window_pattern", 6, []bool{false, true, true, false, false, true}, ""},
		{`{"layer_types": ["full_attention"]}`, "", 0, nil, "layer_types"},
		{`{"sliding_window_pattern": 0}`, "sliding_window_pattern", 6, nil, "sliding_window_pattern"},
	} {
		got, err := SlidingLayers(cfgOf(t, tc.js), 6, tc.key, tc.def)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.js, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.js, got, err, tc.want)
		}
	}
}

func TestReadSizes(t *testing.T) {
	c := cfgOf(t, `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}`)
	s, err := ReadSizes(c, nil, false)
	if err != nil || s.KVHeads != 4 || s.HeadDim != 16 {
		t.Errorf("%+v %v", s, err)
	}
	c = cfgOf(t, `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "head_dim": 32}`)
	if s, err = ReadSizes(c, nil, true); err != nil || s.HeadDim != 16 {
		t.Errorf("forced head_dim: %+v %v", s, err)
	}
	if s, err = ReadSizes(c, nil, false); err != nil || s.HeadDim != 32 {
		t.Errorf("head_dim key: %+v %v", s, err)
	}
	s, err = ReadSizes(cfgOf(t, `{"text_config": {"hidden_size": 96}}`).Text(), map[string]int{"vocab_size": 0, "intermediate_size": 9, "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256}, false)
	if err != nil || s.Heads != 8 || s.KVHeads != 4 || s.HeadDim != 256 || s.Hidden != 96 {
		t.Errorf("sparse: %+v %v", s, err)
	}
	if _, err := ReadSizes(cfgOf(t, `{"text_config": {"vocab_size": 9, "hidden_size": 0}}`).Text(), map[string]int{}, false); err == nil || !strings.Contains(err.Error(), "text_config.hidden_size") {
		t.Errorf("error %v, want one naming text_config.hidden_size", err)
	}
}
