package ui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// realBuild is the mlxchat binary and the tiny model (models/cmd/mkmodel
// with writeTinyTokenizer), made once per test binary for the tests that
// run the real program in tmux.
var realBuild struct {
	once       sync.Once
	dir        string
	bin, model string
	err        string
}

// realChat returns the mlxchat binary, the tiny model directory and tmux.
// Without tmux the test skips, except in CI (CI=true), where it fails:
// scripts/test.sh installs tmux. A build failure always fails.
func realChat(t *testing.T) (bin, model, tmuxBin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the binary and runs a model in tmux")
	}
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (scripts/test.sh installs it); the real-terminal tests need it")
		}
		t.Skip("tmux is not installed; run scripts/test.sh, which installs it")
	}
	realBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "mlxchat-ui-bin-")
		if err != nil {
			realBuild.err = err.Error()
			return
		}
		realBuild.dir = dir
		build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), ".", "./models/cmd/mkmodel")
		build.Dir = moduleRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			realBuild.err = "building mlxchat and mkmodel: " + err.Error() + "\n" + string(out)
			return
		}
		tokJSON, tokCfg := writeTinyTokenizer(t, dir)
		model := filepath.Join(dir, "tiny-model")
		mk := exec.Command(filepath.Join(dir, "mkmodel"), "-kind", "tiny", "-out", model, "-bits", "4",
			"-tokenizer", tokJSON, "-tokenizer-config", tokCfg)
		if out, err := mk.CombinedOutput(); err != nil {
			realBuild.err = "mkmodel: " + err.Error() + "\n" + string(out)
			return
		}
		realBuild.bin, realBuild.model = filepath.Join(dir, "mlxchat"), model
	})
	if realBuild.err != "" {
		t.Fatal(strings.TrimSpace(realBuild.err))
	}
	return realBuild.bin, realBuild.model, tmuxBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{realBuild.dir, tinyDir.dir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}
