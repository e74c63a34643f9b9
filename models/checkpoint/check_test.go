package checkpoint_test

import (
	"strings"
	"testing"

	"mlxchat/models/synth"
)

func TestCheckSizesAgainstTensors(t *testing.T) {
	d := synth.TinyGemma3n()
	c := open(t, writeTiny(t, synth.Options{Bits: 4, Seed: 3}))
	text := c.Config.Text()
	if n := c.CountIndexed(vlm + "layers."); n != d.Layers {
		t.Fatalf("CountIndexed(layers.) = %d, want %d", n, d.Layers)
	}
	if n := c.CountIndexed(vlm + "nope."); n != 0 {
		t.Fatalf("CountIndexed(nope.) = %d", n)
	}
	cases := []struct {
		name string
		err  error
		want string // substring; "" = no error
	}{
		{"layers agree", c.CheckCount(text, "num_hidden_layers", d.Layers, vlm+"layers."), ""},
		{"layers disagree", c.CheckCount(text, "num_hidden_layers", 4000000000, vlm+"layers."),
			"config.json: text_config.num_hidden_layers = 4000000000, but the weights hold 10 (" + vlm + "layers.0 to " + vlm + "layers.9)"},
		{"no layers", c.CheckCount(text, "num_hidden_layers", 2, "x.layers."), "but the weights hold none"},
		{"vocab agrees", c.CheckDim(text, "vocab_size", d.Vocab, vlm+"embed_tokens.weight", 0), ""},
		{"vocab disagrees", c.CheckDim(text, "vocab_size", 4000, vlm+"embed_tokens.weight", 0),
			"config.json: text_config.vocab_size = 4000, but " + vlm + "embed_tokens.weight in "},
		{"rows", c.CheckDim(text, "vocab_size", 4000, vlm+"embed_tokens.weight", 0), "model.safetensors has 512 rows"},
		{"other axis", c.CheckDim(text, "hidden_size", 7, vlm+"norm.weight", 0), "has 128 rows"},
		{"bad axis", c.CheckDim(text, "hidden_size", 7, vlm+"norm.weight", 1), "no axis 1"},
		{"missing tensor", c.CheckDim(text, "hidden_size", 7, "nope.weight", 0), `tensor "nope.weight" not found`},
	}
	for _, tc := range cases {
		if tc.want == "" {
			if tc.err != nil {
				t.Errorf("%s: %v", tc.name, tc.err)
			}
			continue
		}
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}
