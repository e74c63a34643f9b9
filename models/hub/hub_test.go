package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const testRepo = "mlx-community/gemma-3n-E2B-it-4bit"

// fakeHub emulates the Hugging Face endpoints Download uses: the revision
// API, resolve URLs (LFS files redirect to a CDN path and announce their
// sha256 in X-Linked-Etag; small files carry their git blob sha1 as ETag)
// and a CDN that honours Range requests.
type fakeHub struct {
	commit string
	files  map[string][]byte
	lfs    map[string]bool
	token  string // required bearer token, "" for none

	mu       sync.Mutex
	badHash  map[string]bool  // announce a hash that does not match
	cutAfter map[string]int64 // abort the first full GET of a file after this many bytes
	requests []string

	// hostile behaviours
	noSizes   bool             // neither the listing nor HEAD gives sizes
	listSize  map[string]int64 // size the listing (and HEAD) claims, instead of the real one
	streamCap map[string]int64 // stream this many bytes without a Content-Length (repeating the data)
	slowCDN   time.Duration    // sleep before serving a CDN body
}

func newFakeHub() *fakeHub {
	r := rand.New(rand.NewPCG(1, 2))
	weights := make([]byte, 3<<20+123)
	for i := range weights {
		weights[i] = byte(r.Uint32())
	}
	return &fakeHub{
		commit: strings.Repeat("ab12", 10),
		files: map[string][]byte{
			"config.json":            []byte(`{"model_type":"gemma3n"}`),
			"generation_config.json": []byte(`{"eos_token_id":[1,106]}`),
			"model.safetensors":      weights,
			"tokenizer.json":         []byte(`{"model":{"type":"BPE"}}`),
			"tokenizer_config.json":  []byte(`{}`),
			"chat_template.jinja":    []byte(`{{ messages }}`),
			"README.md":              []byte("# readme"),
			".gitattributes":         []byte("*.safetensors filter=lfs"),
			"sub/extra.safetensors":  []byte("nested, not needed"),
		},
		lfs:       map[string]bool{"model.safetensors": true, "sub/extra.safetensors": true},
		badHash:   map[string]bool{},
		cutAfter:  map[string]int64{},
		listSize:  map[string]int64{},
		streamCap: map[string]int64{},
	}
}

func gitSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (h *fakeHub) etag(name string) string {
	var e string
	if h.lfs[name] {
		e = sha256Hex(h.files[name])
	} else {
		e = gitSHA1(h.files[name])
	}
	if h.badHash[name] {
		e = strings.Repeat("0", len(e))
	}
	return e
}

func (h *fakeHub) log(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+r.Header.Get("Range")))
}

func (h *fakeHub) takeRequests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.requests
	h.requests = nil
	return r
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.log(r)
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, "Invalid credentials", http.StatusUnauthorized)
		return
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/models/"+testRepo+"/revision/"):
		var sib []map[string]any
		for n, data := range h.files {
			e := map[string]any{"rfilename": n}
			if r.URL.Query().Get("blobs") == "true" && !h.noSizes {
				size := h.size(n, data)
				e["size"] = size
				if h.lfs[n] {
					e["size"] = 134 // the pointer file
					e["lfs"] = map[string]any{"sha256": h.etag(n), "size": size, "pointerSize": 134}
				}
			}
			sib = append(sib, e)
		}
		json.NewEncoder(w).Encode(map[string]any{"id": testRepo, "sha": h.commit, "siblings": sib})
	case strings.HasPrefix(p, "/"+testRepo+"/resolve/"+h.commit+"/"):
		name := strings.TrimPrefix(p, "/"+testRepo+"/resolve/"+h.commit+"/")
		data, ok := h.files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Repo-Commit", h.commit)
		if h.lfs[name] {
			w.Header().Set("X-Linked-Etag", `"`+h.etag(name)+`"`)
			if !h.noSizes {
				w.Header().Set("X-Linked-Size", fmt.Sprint(h.size(name, data)))
			}
			w.Header().Set("ETag", `"`+gitSHA1([]byte("pointer"))+`"`)
			http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
			return
		}
		w.Header().Set("ETag", `"`+h.etag(name)+`"`)
		if h.noSizes || h.streamCap[name] > 0 {
			h.stream(w, r, name)
			return
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	case strings.HasPrefix(p, "/cdn/"):
		name := strings.TrimPrefix(p, "/cdn/")
		data := h.files[name]
		if h.slowCDN > 0 {
			time.Sleep(h.slowCDN)
		}
		if h.noSizes || h.streamCap[name] > 0 {
			h.stream(w, r, name)
			return
		}
		h.mu.Lock()
		cut, doCut := h.cutAfter[name]
		if doCut && r.Header.Get("Range") == "" {
			delete(h.cutAfter, name)
		} else {
			doCut = false
		}
		h.mu.Unlock()
		if doCut {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.WriteHeader(http.StatusOK)
			w.Write(data[:cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-body
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	default:
		http.NotFound(w, r)
	}
}

// size is what the hub announces for a file.
func (h *fakeHub) size(name string, data []byte) int64 {
	if n, ok := h.listSize[name]; ok {
		return n
	}
	return int64(len(data))
}

// stream sends a file without a Content-Length (chunked), as a server that
// announces no size does; with streamCap set it keeps repeating the data
// up to that many bytes, as a hostile one does.
func (h *fakeHub) stream(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	data := h.files[name]
	total := h.streamCap[name]
	if total == 0 {
		total = int64(len(data))
	}
	w.WriteHeader(http.StatusOK)
	for sent := int64(0); sent < total; {
		chunk := data[:min(int64(len(data)), total-sent)]
		if _, err := w.Write(chunk); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		sent += int64(len(chunk))
	}
}

type env map[string]string

func (e env) get(k string) string { return e[k] }

func testOptions(t *testing.T, srv *httptest.Server) (Options, string) {
	t.Helper()
	root := t.TempDir()
	e := env{"HF_ENDPOINT": srv.URL, "HF_HOME": filepath.Join(root, "hf"), "HOME": filepath.Join(root, "home")}
	return Options{Getenv: e.get, DataDir: filepath.Join(root, "data")}, filepath.Join(root, "hf", "hub")
}

func TestDownloadAndReuse(t *testing.T) {
	h := newFakeHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, cache := testOptions(t, srv)
	var reports []Progress
	opt.Progress = func(p Progress) { reports = append(reports, p) }

	res, err := Resolve(context.Background(), "gemma3n-e2b-4bit", opt)
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(cache, "models--mlx-community--gemma-3n-E2B-it-4bit", "snapshots", h.commit)
	if res.Dir != wantDir || res.Source != "download" || res.Repo != testRepo {
		t.Fatalf("resolution %+v, want dir %s", res, wantDir)
	}
	for name, data := range h.files {
		p := filepath.Join(res.Dir, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if !WantFile(name) {
			if err == nil {
				t.Errorf("%s was downloaded but is not needed", name)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %v (equal %v)", name, err, bytes.Equal(got, data))
		}
		link, err := os.Readlink(p)
		if err != nil || link != filepath.Join("..", "..", "blobs", h.etag(name)) {
			t.Fatalf("%s: link %q %v", name, link, err)
		}
	}
	ref, _ := os.ReadFile(filepath.Join(cache, "models--mlx-community--gemma-3n-E2B-it-4bit", "refs", "main"))
	if string(ref) != h.commit {
		t.Fatalf("refs/main = %q", ref)
	}
	// Progress: per-file byte counts never go backwards and end complete.
	var last Progress
	var sawPartial bool
	for _, p := range reports {
		if p.File == last.File && p.Done < last.Done {
			t.Fatalf("progress went backwards: %+v after %+v", p, last)
		}
		if p.File == "model.safetensors" && p.Done > 0 && p.Done < p.Total {
			sawPartial = true
		}
		last = p
	}
	if !sawPartial || !last.FileCompleted || last.AllDone != last.AllTotal || last.FileIndex != last.Files || last.Files != 6 {
		t.Fatalf("progress: partial %v, last %+v", sawPartial, last)
	}

	// A second resolution finds the cache and makes no request.
	h.takeRequests()
	res2, err := Resolve(context.Background(), testRepo, opt)
	if err != nil || res2.Dir != res.Dir || res2.Source != "hf-cache" {
		t.Fatalf("second resolve %+v %v", res2, err)
	}
	if r := h.takeRequests(); len(r) != 0 {
		t.Fatalf("cached model made requests: %v", r)
	}
	// Downloading again reuses complete blobs (only metadata requests).
	if _, err := Download(context.Background(), testRepo, opt); err != nil {
		t.Fatal(err)
	}
	for _, r := range h.takeRequests() {
		if strings.HasPrefix(r, "GET /cdn/") || (strings.HasPrefix(r, "GET ") && strings.Contains(r, "/resolve/")) {
			t.Fatalf("complete blob fetched again: %s", r)
		}
	}
}

func TestDownloadResumes(t *testing.T) {
	h := newFakeHub()
	const cut = 1<<20 + 17
	h.cutAfter["model.safetensors"] = cut
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, cache := testOptions(t, srv)

	_, err := Resolve(context.Background(), testRepo, opt)
	if err == nil || !strings.Contains(err.Error(), "resumable") {
		t.Fatalf("interrupted download: error %v", err)
	}
	part := filepath.Join(cache, "models--mlx-community--gemma-3n-E2B-it-4bit", "blobs", h.etag("model.safetensors")+".incomplete")
	st, err := os.Stat(part)
	if err != nil || st.Size() != cut {
		t.Fatalf("partial file: %v size %d, want %d", err, st.Size(), cut)
	}
	h.takeRequests()
	res, err := Resolve(context.Background(), testRepo, opt)
	if err != nil {
		t.Fatal(err)
	}
	var resumed bool
	for _, r := range h.takeRequests() {
		if r == fmt.Sprintf("GET /cdn/model.safetensors bytes=%d-", cut) {
			resumed = true
		}
	}
	if !resumed {
		t.Fatal("no Range request resumed the download")
	}
	got, _ := os.ReadFile(filepath.Join(res.Dir, "model.safetensors"))
	if !bytes.Equal(got, h.files["model.safetensors"]) {
		t.Fatal("resumed file differs")
	}
	if _, err := os.Stat(part); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(".incomplete left behind")
	}
}

func TestDownloadRejectsBadHash(t *testing.T) {
	for _, file := range []string{"model.safetensors", "tokenizer.json"} {
		t.Run(file, func(t *testing.T) {
			h := newFakeHub()
			h.badHash[file] = true
			srv := httptest.NewServer(h)
			defer srv.Close()
			opt, cache := testOptions(t, srv)
			_, err := Resolve(context.Background(), testRepo, opt)
			want := "sha256 mismatch"
			if !h.lfs[file] {
				want = "git sha1 mismatch"
			}
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("error %v, want %q naming %s", err, want, file)
			}
			blobs := filepath.Join(cache, "models--mlx-community--gemma-3n-E2B-it-4bit", "blobs")
			for _, suffix := range []string{"", ".incomplete"} {
				if _, err := os.Stat(filepath.Join(blobs, h.etag(file)+suffix)); err == nil {
					t.Fatalf("rejected download kept as %s%s", h.etag(file), suffix)
				}
			}
			if _, _, err := Locate(testRepo, opt); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a model with a rejected file is found: %v", err)
			}
		})
	}
}

func TestDownloadToken(t *testing.T) {
	h := newFakeHub()
	h.token = "hf_secret"
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, _ := testOptions(t, srv)
	_, err := Resolve(context.Background(), testRepo, opt)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("without token: %v", err)
	}
	e := env{"HF_ENDPOINT": srv.URL, "HF_TOKEN": "hf_secret", "HF_HOME": t.TempDir()}
	opt.Getenv = e.get
	if _, err := Resolve(context.Background(), testRepo, opt); err != nil {
		t.Fatalf("with HF_TOKEN: %v", err)
	}
}

func TestDownloadCancel(t *testing.T) {
	h := newFakeHub()
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, _ := testOptions(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.Progress = func(p Progress) {
		if p.File == "model.safetensors" && p.Done > 0 {
			cancel()
		}
	}
	_, err := Resolve(ctx, testRepo, opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func writeModel(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644)
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	local := filepath.Join(root, "local")
	writeModel(t, local)
	hubCache := filepath.Join(root, "cache")
	commit := strings.Repeat("c", 40)
	repoDir := filepath.Join(hubCache, "models--mlx-community--Qwen3-4B-4bit")
	writeModel(t, filepath.Join(repoDir, "snapshots", commit))
	os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit+"\n"), 0o644)
	// A sharded snapshot missing a shard is not complete.
	broken := filepath.Join(hubCache, "models--org--broken", "snapshots", commit)
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, "config.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(broken, "model.safetensors.index.json"), []byte(`{"weight_map":{"a":"model-00001-of-00002.safetensors"}}`), 0o644)
	os.MkdirAll(filepath.Join(hubCache, "models--org--broken", "refs"), 0o755)
	os.WriteFile(filepath.Join(hubCache, "models--org--broken", "refs", "main"), []byte(commit), 0o644)
	data := filepath.Join(root, "data")
	writeModel(t, filepath.Join(data, "org", "inxdg"))

	e := env{"HF_HUB_CACHE": hubCache, "HF_HOME": filepath.Join(root, "ignored"), "HOME": root}
	opt := Options{Getenv: e.get, DataDir: data}
	cases := []struct {
		name   string
		dir    string
		source string
		err    string
	}{
		{local, local, "path", ""},
		{"~/local", local, "path", ""},
		{"qwen3-4b-4bit", filepath.Join(repoDir, "snapshots", commit), "hf-cache", ""},
		{"mlx-community/Qwen3-4B-4bit", filepath.Join(repoDir, "snapshots", commit), "hf-cache", ""},
		{"https://huggingface.co/mlx-community/Qwen3-4B-4bit", filepath.Join(repoDir, "snapshots", commit), "hf-cache", ""},
		{"org/inxdg", filepath.Join(data, "org", "inxdg"), "data-dir", ""},
		{"org/broken", "", "", "shard model-00001-of-00002.safetensors listed in model.safetensors.index.json is missing"},
		{"./missing/dir", "", "", "model directory ./missing/dir: no such file or directory"},
		{"not a name!", "", "", `model "not a name!" is not a directory, a known alias`},
		{"", "", "", "empty model name"},
	}
	for _, tc := range cases {
		res, _, err := Locate(tc.name, opt)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || res.Dir != tc.dir || res.Source != tc.source {
			t.Errorf("%q: %+v %v, want %s from %s", tc.name, res, err, tc.dir, tc.source)
		}
	}
	// Offline: a missing model names every place looked at.
	e["HF_HUB_OFFLINE"] = "1"
	_, err := Resolve(context.Background(), "gemma3n-e4b-4bit", opt)
	want := fmt.Sprintf("model gemma3n-e4b-4bit (mlx-community/gemma-3n-E4B-it-4bit) not found (looked in %s, %s) and downloads are off (offline)",
		filepath.Join(hubCache, "models--mlx-community--gemma-3n-E4B-it-4bit"), filepath.Join(data, "mlx-community", "gemma-3n-E4B-it-4bit"))
	if err == nil || err.Error() != want {
		t.Fatalf("offline error:\n%v\nwant\n%s", err, want)
	}
}

func TestCacheDirPrecedence(t *testing.T) {
	cases := []struct {
		env  env
		want string
	}{
		{env{"HF_HUB_CACHE": "/a", "HF_HOME": "/b", "HOME": "/h"}, "/a"},
		{env{"HF_HOME": "/b", "HOME": "/h"}, "/b/hub"},
		{env{"HOME": "/h"}, "/h/.cache/huggingface/hub"},
	}
	for _, tc := range cases {
		got, err := Options{Getenv: tc.env.get}.cacheDir()
		if err != nil || got != tc.want {
			t.Errorf("%v: %q %v, want %q", tc.env, got, err, tc.want)
		}
	}
	if got := (Options{Getenv: env{}.get}).endpoint(); got != DefaultEndpoint {
		t.Errorf("default endpoint %q", got)
	}
	if got := (Options{Getenv: env{"HF_ENDPOINT": "https://mirror.example/"}.get}).endpoint(); got != "https://mirror.example" {
		t.Errorf("HF_ENDPOINT not honoured: %q", got)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gemma3n-e2b-4bit", "mlx-community/gemma-3n-E2B-it-4bit"},
		{"Gemma3n-E2B-4bit", "mlx-community/gemma-3n-E2B-it-4bit"},
		{"gemma3n-e4b-8bit", "mlx-community/gemma-3n-E4B-it-8bit"},
		{"gemma-3n-e2b-it-4bit", "mlx-community/gemma-3n-E2B-it-4bit"},
		{"qwen3-0.6b-4bit", "mlx-community/Qwen3-0.6B-4bit"},
		{"llama-3.2-1b-instruct-4bit", "mlx-community/Llama-3.2-1B-Instruct-4bit"},
		{"gemma-3-4b-it-qat", "mlx-community/gemma-3-4b-it-qat-4bit"},
	} {
		if got, ok := ExpandAlias(tc.in); !ok || got != tc.want {
			t.Errorf("ExpandAlias(%q) = %q %v, want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := ExpandAlias("gemma9"); ok {
		t.Error("unknown alias expanded")
	}
	seen := map[string]bool{}
	for _, a := range Aliases() {
		if !IsRepoID(a.Repo) || a.ModelType == "" || a.Name != strings.ToLower(a.Name) || seen[a.Name] {
			t.Errorf("alias %+v: not a repo id, no model type, not lower case or listed twice", a)
		}
		seen[a.Name] = true
	}
	for s, want := range map[string]bool{"org/name": true, "mlx-community/Qwen3-0.6B-4bit": true, "org": false,
		"org/name/x": false, "../x": false, "org/..": false, "a b/c": false, "/abs": false} {
		if IsRepoID(s) != want {
			t.Errorf("IsRepoID(%q) = %v", s, !want)
		}
	}
	for s, want := range map[string]bool{"config.json": true, "model-00001-of-00002.safetensors": true, "tokenizer.model": true,
		"tokenizer.json": true, "chat_template.jinja": true, "README.md": false, ".gitattributes": false,
		"sub/model.safetensors": false, "original/consolidated.pth": false, "model.gguf": false} {
		if WantFile(s) != want {
			t.Errorf("WantFile(%q) = %v", s, !want)
		}
	}
}

// A repository whose config.json names a model type CheckConfig refuses
// costs one small download: config.json is fetched first and checked, and
// neither the weights nor the tokenizer are requested.
func TestUnsupportedModelTypeFetchesConfigOnly(t *testing.T) {
	h := newFakeHub()
	h.files["config.json"] = []byte(`{"model_type":"olmo2"}`)
	srv := httptest.NewServer(h)
	defer srv.Close()
	opt, cache := testOptions(t, srv)
	supported := []string{"gemma3n", "llama", "qwen3"}
	opt.CheckConfig = func(path string) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var c struct {
			ModelType string `json:"model_type"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			return err
		}
		for _, s := range supported {
			if s == c.ModelType {
				return nil
			}
		}
		return fmt.Errorf("%s: model_type %q not supported (known: %s)", path, c.ModelType, strings.Join(supported, ", "))
	}
	_, err := Resolve(context.Background(), "gemma3n-e2b-4bit", opt)
	var ue *UnsupportedError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), `model_type "olmo2" not supported (known: gemma3n, llama, qwen3)`) ||
		!strings.Contains(err.Error(), "only config.json of "+testRepo+" was downloaded") || strings.Contains(err.Error(), "not found") {
		t.Fatalf("error %v", err)
	}
	for _, r := range h.takeRequests() {
		if strings.HasPrefix(r, "GET ") && !strings.Contains(r, "/revision/") && !strings.HasSuffix(r, "/config.json") {
			t.Errorf("request %q after the refused config.json", r)
		}
		if strings.HasPrefix(r, "HEAD ") && !strings.HasSuffix(r, "/config.json") {
			t.Errorf("request %q after the refused config.json", r)
		}
	}
	blobs, _ := os.ReadDir(filepath.Join(cache, repoFolder(testRepo), "blobs"))
	if len(blobs) != 1 {
		t.Errorf("%d blobs in the cache, want config.json's alone", len(blobs))
	}
	// A supported type downloads as usual, reusing the config.json blob.
	supported = append(supported, "olmo2")
	res, err := Resolve(context.Background(), "gemma3n-e2b-4bit", opt)
	if err != nil || res.Source != "download" {
		t.Fatalf("after allowing the type: %+v %v", res, err)
	}
}
