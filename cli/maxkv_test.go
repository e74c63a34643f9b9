package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"
)

// TestMaxKVAboveContext: --max-kv-size (or the config's max_kv_size)
// above the model's context length is refused by run, bench and the chat
// with one line naming the flag or the config file and key, the value and
// the limit, as the chat's /kv refuses it; at the context length, below
// it, or with a flag under a config value above it, the command runs.
func TestMaxKVAboveContext(t *testing.T) {
	dir := tinyWithContext(t, 2048)
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"max_kv_size": 2049}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const flagErr = "--max-kv-size 5000: above the model's context length of 2,048 tokens (max_position_embeddings); use --max-kv-size 2048 or less, or --max-kv-size 0 for the whole context"
	cfgErr := "config " + cfg + ": max_kv_size 2049: above the model's context length of 2,048 tokens (max_position_embeddings); set max_kv_size to 2048 or less, or to 0 for the whole context"
	run := []string{"run", dir, "--prompt", "hello", "--max-tokens", "2", "--threads", "1"}
	bench := []string{"bench", dir, "--prompt-lens", "8", "--decode", "1", "--bandwidth-mb", "1", "--threads", "1"}
	tests := []struct {
		name    string
		args    []string
		wantErr string // "" = runs
	}{
		{"run flag above", append(run, "--max-kv-size", "5000"), "mlxchat run: " + flagErr},
		{"run flag one above", append(run, "--max-kv-size=2049"), "mlxchat run: --max-kv-size 2049: above the model's context length of 2,048 tokens"},
		{"run flag at the context", append(run, "--max-kv-size", "2048"), ""},
		{"run flag off", append(run, "--max-kv-size", "0"), ""},
		{"run config above", append(run, "--config", cfg), "mlxchat run: " + cfgErr},
		{"run flag overrides config", append(run, "--config", cfg, "--max-kv-size", "64"), ""},
		{"bench flag above", append(bench, "--max-kv-size", "5000"), "mlxchat bench: " + flagErr},
		{"bench config above", append(bench, "--config", cfg), "mlxchat bench: " + cfgErr},
		{"bench at the context", append(bench, "--max-kv-size", "2048"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := invoke(t, "", tc.args...)
			if tc.wantErr == "" {
				if code != 0 {
					t.Fatalf("exit %d, stderr %q: want it to run", code, errOut)
				}
				return
			}
			line := strings.TrimSuffix(errOut, "\n")
			if code != 2 || strings.Contains(line, "\n") || !strings.HasPrefix(line, tc.wantErr) {
				t.Fatalf("exit %d, stderr %q:\nwant exit 2 and one line starting %q", code, errOut, tc.wantErr)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"chat flag above", []string{dir, "--max-kv-size", "5000"}, flagErr},
		{"chat config above", []string{dir, "--config", cfg}, cfgErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := chatExit(t, tc.args)
			if code != 2 || !strings.Contains(out, tc.wantErr) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, tc.wantErr)
			}
		})
	}
}

// chatExit runs the chat (the TUI on a pipe that sends nothing) and
// returns its exit code and everything it wrote, once it exits by itself.
func chatExit(t *testing.T, args []string) (int, string) {
	t.Helper()
	t.Cleanup(xdg.Reload) // runs after the variables below are restored
	t.Setenv("NO_COLOR", "1")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	pr, pw := io.Pipe()
	defer pw.Close()
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), append(args, "--threads", "1"), IO{Stdin: pr, Stdout: &out, Stderr: &out, ForceTUI: true})
	}()
	select {
	case code := <-done:
		return code, out.String()
	case <-time.After(30 * time.Second):
		t.Fatalf("the chat did not exit by itself:\n%s", out.String())
		return 0, ""
	}
}
