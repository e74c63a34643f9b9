package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const testRepoDir = "models--mlx-community--gemma-3n-E2B-it-4bit"

// downloaded resolves testRepo from a fresh fake hub into a new cache.
func downloaded(t *testing.T) (*fakeHub, Options, string, Resolution) {
	t.Helper()
	h := newFakeHub()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opt, cache := testOptions(t, srv)
	res, err := Resolve(context.Background(), testRepo, opt)
	if err != nil {
		t.Fatal(err)
	}
	h.takeRequests()
	return h, opt, cache, res
}

// fetched lists the files a batch of requests downloaded.
func fetched(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if !strings.HasPrefix(r, "GET ") {
			continue
		}
		// Every fetch GETs the resolve URL once (LFS files are then
		// redirected to the CDN).
		if p := strings.Fields(r)[1]; strings.Contains(p, "/resolve/") {
			out = append(out, p[strings.LastIndex(p, "/")+1:])
		}
	}
	slices.Sort(out)
	return out
}

// A snapshot that lost a file (tokenizer.json, a template, or a blob under
// its link) is not complete: Locate says what is missing and Resolve
// restores it, fetching only blobs that are gone.
func TestIncompleteSnapshotRefetched(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(snap, blobs string, h *fakeHub)
		missing string
		refetch []string
	}{
		{"tokenizer.json", func(snap, _ string, _ *fakeHub) { os.Remove(filepath.Join(snap, "tokenizer.json")) },
			"missing [tokenizer.json]", nil},
		{"chat template", func(snap, _ string, _ *fakeHub) { os.Remove(filepath.Join(snap, "chat_template.jinja")) },
			"missing [chat_template.jinja]", nil},
		{"blob under a link", func(_, blobs string, h *fakeHub) { os.Remove(filepath.Join(blobs, h.etag("model.safetensors"))) },
			"missing [model.safetensors]", []string{"model.safetensors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, opt, cache, res := downloaded(t)
			tc.damage(res.Dir, filepath.Join(cache, testRepoDir, "blobs"), h)
			_, _, err := Locate(testRepo, opt)
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), tc.missing) {
				t.Fatalf("Locate: %v, want not-exist saying %q", err, tc.missing)
			}
			offline := opt
			offline.Offline = true
			if _, err := Resolve(context.Background(), testRepo, offline); err == nil || !strings.Contains(err.Error(), tc.missing) {
				t.Fatalf("offline Resolve: %v, want it to say %q", err, tc.missing)
			}
			again, err := Resolve(context.Background(), testRepo, opt)
			if err != nil || again.Dir != res.Dir {
				t.Fatalf("Resolve: %+v %v", again, err)
			}
			if got := fetched(h.takeRequests()); !slices.Equal(got, tc.refetch) {
				t.Fatalf("fetched %v, want %v", got, tc.refetch)
			}
			if r, _, err := Locate(testRepo, opt); err != nil || !r.verified {
				t.Fatalf("after the repair: %+v %v", r, err)
			}
		})
	}
}

// A snapshot made by another tool has no manifest: Resolve checks it once
// against the hub's listing, fetches what is missing, and afterwards makes
// no request; with the hub unreachable the cache is used as it is.
func TestForeignSnapshotVerifiedOnce(t *testing.T) {
	h, opt, cache, res := downloaded(t)
	repoDir := filepath.Join(cache, testRepoDir)
	os.RemoveAll(filepath.Join(repoDir, ".mlxchat"))
	// mlx-lm does not fetch *.jinja
	os.Remove(filepath.Join(res.Dir, "chat_template.jinja"))
	os.Remove(filepath.Join(repoDir, "blobs", h.etag("chat_template.jinja")))

	r, _, err := Locate(testRepo, opt)
	if err != nil || r.verified {
		t.Fatalf("foreign snapshot: %+v %v, want found unverified", r, err)
	}
	if _, err := Resolve(context.Background(), testRepo, opt); err != nil {
		t.Fatal(err)
	}
	if got := fetched(h.takeRequests()); !slices.Equal(got, []string{"chat_template.jinja"}) {
		t.Fatalf("fetched %v, want the template only", got)
	}
	if _, err := Resolve(context.Background(), testRepo, opt); err != nil {
		t.Fatal(err)
	}
	if reqs := h.takeRequests(); len(reqs) != 0 {
		t.Fatalf("verified snapshot made requests: %v", reqs)
	}

	// Complete but unverified, hub down: used as is, no error.
	os.RemoveAll(filepath.Join(repoDir, ".mlxchat"))
	down := opt
	e := env{"HF_ENDPOINT": "http://127.0.0.1:1", "HF_HOME": filepath.Join(cache, "..")}
	down.Getenv = e.get
	got, err := Resolve(context.Background(), testRepo, down)
	if err != nil || got.Dir != res.Dir || got.Source != "hf-cache" {
		t.Fatalf("hub down: %+v %v", got, err)
	}
}

func TestCheckModelDirShards(t *testing.T) {
	dir := t.TempDir()
	write := func(name string) { os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644) }
	write("config.json")
	write("model-00001-of-00003.safetensors")
	write("model-00003-of-00003.safetensors")
	if err := checkModelDir(dir); err == nil || !strings.Contains(err.Error(), "missing shard [model-00002-of-00003.safetensors]") {
		t.Fatalf("missing unindexed shard: %v", err)
	}
	write("model-00002-of-00003.safetensors")
	if err := checkModelDir(dir); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "model-00001-of-00001.safetensors"))
	if err := checkModelDir(dir); err == nil || !strings.Contains(err.Error(), "model-00001-of-00001") {
		t.Fatalf("dangling shard link: %v", err)
	}
}

// A server that announces one size and streams more, or announces none
// and streams without end, is cut off at the listed size (or the cap).
func TestDownloadCapsFileSize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *fakeHub, opt *Options)
		want  string
	}{
		{"more than listed", func(h *fakeHub, _ *Options) {
			h.listSize["tokenizer.json"] = int64(len(h.files["tokenizer.json"]))
			h.streamCap["tokenizer.json"] = 64 << 20
		}, "server sent more than the 24 bytes the hub lists"},
		{"no size anywhere", func(h *fakeHub, opt *Options) {
			h.noSizes = true
			h.streamCap["tokenizer.json"] = 64 << 20
			opt.MaxUnknownSize = 4 << 20
		}, "server sent more than 4194304 bytes for a file of unannounced size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHub()
			srv := httptest.NewServer(h)
			defer srv.Close()
			opt, cache := testOptions(t, srv)
			tc.setup(h, &opt)
			var maxDone, maxTotal int64
			opt.Progress = func(p Progress) { maxDone, maxTotal = max(maxDone, p.AllDone), max(maxTotal, p.AllTotal) }
			_, err := Resolve(context.Background(), testRepo, opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			part, _ := filepath.Glob(filepath.Join(cache, testRepoDir, "blobs", "*.incomplete"))
			for _, p := range part {
				if st, _ := os.Stat(p); st.Size() > 4<<20 {
					t.Fatalf("%s grew to %d bytes", p, st.Size())
				}
			}
			if maxTotal > 0 && maxDone > maxTotal {
				t.Fatalf("progress %d of %d", maxDone, maxTotal)
			}
		})
	}
	// Files without announced sizes download when they stay under the cap,
	// and the progress does not invent a total.
	h := newFakeHub()
	h.noSizes = true
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, _ := testOptions(t, srv)
	var totals []int64
	opt.Progress = func(p Progress) { totals = append(totals, p.AllTotal) }
	if _, err := Resolve(context.Background(), testRepo, opt); err != nil {
		t.Fatal(err)
	}
	for _, tot := range totals {
		if tot != -1 {
			t.Fatalf("AllTotal %d with unknown sizes, want -1", tot)
		}
	}
}

// A full disk stops the download with an error that starts with the cause.
func TestDownloadDiskFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	h := newFakeHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, cache := testOptions(t, srv)
	blobs := filepath.Join(cache, testRepoDir, "blobs")
	os.MkdirAll(blobs, 0o755)
	// Writes to the partial download of the weights go to /dev/full.
	if err := os.Symlink("/dev/full", filepath.Join(blobs, h.etag("model.safetensors")+".incomplete")); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve(context.Background(), testRepo, opt)
	if err == nil || !strings.HasPrefix(err.Error(), "no space left on device: ") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v, want one starting with the cause", err)
	}
	if !strings.Contains(err.Error(), testRepo) {
		t.Fatalf("error %v does not name the model", err)
	}
	t.Log(err)

	// A download larger than the free space stops before it starts.
	h2 := newFakeHub()
	h2.listSize["model.safetensors"] = 1 << 60
	srv2 := httptest.NewServer(h2)
	defer srv2.Close()
	opt2, _ := testOptions(t, srv2)
	_, err = Resolve(context.Background(), testRepo, opt2)
	if err == nil || !strings.HasPrefix(err.Error(), "no space left on device: the download needs 1048576.0 TiB more, ") || !strings.Contains(err.Error(), "is free") {
		t.Fatalf("error %v, want the free-space check", err)
	}
	t.Log(err)
	if got := fetched(h2.takeRequests()); len(got) != 0 {
		t.Fatalf("fetched %v before finding the disk too small", got)
	}
}

// Two first downloads of one model at once both succeed: the second waits
// for the first and reuses its blobs.
func TestConcurrentDownloads(t *testing.T) {
	h := newFakeHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, _ := testOptions(t, srv)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var waited int
	dirs := make([]string, 4)
	errs := make([]error, 4)
	for i := range dirs {
		o := opt
		o.Progress = func(p Progress) {
			if p.Waiting {
				mu.Lock()
				waited++
				mu.Unlock()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Resolve(context.Background(), testRepo, o)
			dirs[i], errs[i] = res.Dir, err
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Fatalf("download %d: %s %v", i, dirs[i], errs[i])
		}
	}
	n := 0
	for _, f := range fetched(h.takeRequests()) {
		if f == "model.safetensors" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the weights were fetched %d times", n)
	}
	if waited == 0 {
		t.Fatal("no download reported waiting")
	}
}

// A waiting download stops when its context is cancelled.
func TestLockWaitCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = lockFile(ctx, p, cancel)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for another download") {
		t.Fatalf("error %v", err)
	}
}

// A repository that another download holds the lock of is not removed.
func TestRemoveRefusesDuringDownload(t *testing.T) {
	_, opt, cache, res := downloaded(t)
	unlock, err := lockFile(context.Background(), filepath.Join(cache, ".locks", testRepoDir, "mlxchat-download.lock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Remove(context.Background(), testRepo, opt); err == nil || !strings.Contains(err.Error(), "is being downloaded") {
		t.Fatalf("Remove during a download: %v", err)
	}
	if _, err := os.Stat(res.Dir); err != nil {
		t.Fatalf("removed anyway: %v", err)
	}
	unlock()
	removed, err := Remove(context.Background(), "gemma3n-e2b-4bit", opt)
	if err != nil || len(removed) != 1 || removed[0].Root != filepath.Join(cache, testRepoDir) || removed[0].Bytes < 3<<20 {
		t.Fatalf("Remove: %+v %v", removed, err)
	}
	for _, p := range []string{filepath.Join(cache, testRepoDir), filepath.Join(cache, ".locks", testRepoDir)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s left behind: %v", p, err)
		}
	}
	list, err := List(opt)
	if err != nil || len(list) != 0 {
		t.Fatalf("List after Remove: %+v %v", list, err)
	}
}

// TestCheckModelDirHostileFiles: a model directory whose config.json,
// weights or shard index is a named pipe (or a link to /dev/zero) is
// refused at once with one line saying which file; reading the index
// blocked Locate forever (QA), and a named pipe in place of config.json
// or model.safetensors was reported as "no config.json" or "no safetensors
// weights".
func TestCheckModelDirHostileFiles(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"config.json", "config.json is %s, expected a regular file"},
		{"model.safetensors", "model.safetensors is %s, expected a regular file"},
		{"model.safetensors.index.json", "model.safetensors.index.json is %s, expected a regular file"},
	} {
		for _, zero := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s zero=%v", tc.file, zero), func(t *testing.T) {
				dir := t.TempDir()
				os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644)
				if tc.file == "model.safetensors.index.json" {
					os.WriteFile(filepath.Join(dir, "model-00001-of-00001.safetensors"), []byte("x"), 0o644)
				}
				p := filepath.Join(dir, tc.file)
				os.Remove(p)
				var err error
				if zero {
					err = os.Symlink("/dev/zero", p)
				} else {
					err = syscall.Mkfifo(p, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- checkModelDir(dir) }()
				select {
				case err := <-done:
					kind := "a named pipe (FIFO)"
					if zero {
						kind = "a character device"
					}
					if want := "model directory " + dir + ": " + fmt.Sprintf(tc.want, kind); err == nil || err.Error() != want {
						t.Fatalf("checkModelDir: %v, want %q", err, want)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("checkModelDir hangs")
				}
			})
		}
	}
}
