package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFlag: --version and version print the same line; extra
// arguments are a one-line usage error naming what was given.
func TestVersionFlag(t *testing.T) {
	_, want, _ := invoke(t, "", "version")
	if !strings.HasPrefix(want, "mlxchat ") || strings.Count(want, "\n") != 1 {
		t.Fatalf("version: %q", want)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--version"}, 0, ""},
		{[]string{"version"}, 0, ""},
		{[]string{"version", "--version"}, 0, ""},
		{[]string{"--version", "foo"}, 2, "mlxchat: --version takes no arguments, got foo\n"},
		{[]string{"run", "m", "--version"}, 2, "mlxchat: --version takes no arguments, got run m\n"},
		{[]string{"version", "foo"}, 2, "mlxchat version: takes no arguments, got foo\n"},
		{[]string{"version", "foo", "bar"}, 2, "mlxchat version: takes no arguments, got foo bar\n"},
	} {
		code, out, errOut := invoke(t, "", tc.args...)
		wantOut := want
		if tc.code != 0 {
			wantOut = ""
		}
		if code != tc.code || out != wantOut || errOut != tc.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, out, errOut, tc.code, wantOut, tc.stderr)
		}
	}
}

func TestVersionLine(t *testing.T) {
	goPart := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	const rev = "0655c6157a4eab1cb0602ebd839477c22a4cfff3"
	for _, tc := range []struct {
		version string
		bi      *debug.BuildInfo
		want    string
	}{
		{"", nil, "mlxchat devel (rev unknown, " + goPart},
		{"", vcs("-buildmode", "exe"), "mlxchat devel (rev unknown, " + goPart},
		{"", vcs("vcs", "git", "vcs.revision", rev, "vcs.modified", "false"), "mlxchat devel (rev 0655c6157a4e, " + goPart},
		{"", vcs("vcs", "git", "vcs.revision", rev, "vcs.modified", "true"), "mlxchat devel (rev 0655c6157a4e, modified, " + goPart},
		{"v1.2.3", vcs("vcs.revision", rev), "mlxchat v1.2.3 (rev 0655c6157a4e, " + goPart},
		{"v1.2.3", vcs("vcs.revision", "abc"), "mlxchat v1.2.3 (rev abc, " + goPart},
	} {
		if got := versionLine(tc.version, tc.bi); got != tc.want {
			t.Errorf("versionLine(%q, %v) = %q, want %q", tc.version, tc.bi, got, tc.want)
		}
	}
}

// TestVersionFromGitBuild builds mlxchat with `go build` as the main
// module of a fresh git repository (a go.work joins this module to it)
// and wants --version to show that repository's revision, then
// "modified" once the tree has an uncommitted change.
func TestVersionFromGitBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary twice")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(gomod)
	work := t.TempDir()
	app := filepath.Join(work, "app")
	files := map[string]string{
		"go.work":     string(goLine) + "\n\nuse (\n\t./app\n\t" + root + "\n)\n",
		"app/go.mod":  "module app\n\n" + string(goLine) + "\n",
		"app/main.go": "package main\n\nimport (\n\t\"context\"\n\t\"os\"\n\n\t\"mlxchat/cli\"\n)\n\nfunc main() {\n\tos.Exit(cli.Main(context.Background(), os.Args[1:], cli.IO{Stdout: os.Stdout, Stderr: os.Stderr}))\n}\n",
	}
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn := func(args ...string) string {
		return run(app, git, append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	}
	gitIn("init", "-q")
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "app")
	rev := gitIn("rev-parse", "HEAD")
	version := func() string {
		bin := filepath.Join(work, "mlxchat")
		// -buildvcs=true overrides a GOFLAGS=-buildvcs=false of the
		// environment: the stamp is what is tested.
		run(app, "go", "build", "-buildvcs=true", "-o", bin, ".")
		return run(app, bin, "--version")
	}
	goPart := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	if got, want := version(), "mlxchat devel (rev "+rev[:12]+", "+goPart; got != want {
		t.Fatalf("clean checkout: --version %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), append([]byte(files["app/main.go"]), "\n// changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := version(), "mlxchat devel (rev "+rev[:12]+", modified, "+goPart; got != want {
		t.Fatalf("uncommitted change: --version %q, want %q", got, want)
	}
}
