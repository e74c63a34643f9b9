package gemma3n

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"mlxchat/models/synth"
)

// TestHostileConfigSizes loads the tiny model with one text_config key
// replaced: every out-of-range or inconsistent size is a one-line error
// naming config.json and the key, never a panic or a huge allocation.
func TestHostileConfigSizes(t *testing.T) {
	src := tinyDir(t, synth.Options{Seed: 14})
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	be := newBackend(t)
	cases := []struct {
		key  string
		val  any
		want string
	}{
		{"num_hidden_layers", -1, "text_config.num_hidden_layers = -1 out of range (want 1 to 1024)"},
		{"num_hidden_layers", 4000000000, "text_config.num_hidden_layers = 4000000000 out of range"},
		{"num_hidden_layers", 12, "intermediate_size has 10 entries"},
		{"vocab_size", 4000000000, "text_config.vocab_size = 4000000000 out of range"},
		{"vocab_size", 1000, "text_config.vocab_size = 1000, but language_model.model.embed_tokens.weight"},
		{"hidden_size", -5, "text_config.hidden_size = -5 out of range"},
		{"head_dim", 4000000000, "text_config.head_dim = 4000000000 out of range"},
		{"num_attention_heads", 0, "text_config.num_attention_heads = 0 out of range"},
		{"num_key_value_heads", 1 << 40, "text_config.num_key_value_heads = 1099511627776 out of range"},
		{"intermediate_size", []int{256, -1}, "text_config.intermediate_size[1] = -1 out of range"},
		{"intermediate_size", 4000000000, "text_config.intermediate_size = 4000000000 out of range"},
		{"sliding_window", 0, "text_config.sliding_window = 0 out of range"},
		{"max_position_embeddings", -1, "text_config.max_position_embeddings = -1 out of range"},
		{"vocab_size_per_layer_input", 4000000000, "text_config.vocab_size_per_layer_input = 4000000000 out of range"},
		{"altup_num_inputs", 1000, "text_config.altup_num_inputs = 1000 out of range"},
		{"laurel_rank", 1 << 30, "text_config.laurel_rank = 1073741824 out of range"},
		{"bos_token_id", -2, "text_config.bos_token_id = -2 out of range"},
		{"activation_sparsity_pattern", 4000000000, "text_config.activation_sparsity_pattern = 4e+09 out of range"},
		{"rope_theta", -1, "text_config.rope_theta = -1 out of range"},
		{"final_logit_softcapping", -30, "text_config.final_logit_softcapping = -30 out of range"},
		{"eos_token_id", 4000000000, ""}, // text_config's is not read: generation_config.json has one
	}
	for _, tc := range cases {
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["text_config"].(map[string]any)[tc.key] = tc.val
		dir := t.TempDir()
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"model.safetensors", "generation_config.json"} {
			if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Load(dir, be)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s=%v: loading allocated %d MiB", tc.key, tc.val, grew>>20)
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s=%v: %v", tc.key, tc.val, err)
			} else {
				m.Close()
			}
			continue
		}
		if err == nil {
			m.Close()
			t.Errorf("%s=%v loaded", tc.key, tc.val)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "config.json") || strings.Contains(msg, "\n") {
			t.Errorf("%s=%v: error %q, want one line naming config.json containing %q", tc.key, tc.val, msg, tc.want)
		}
	}
}
