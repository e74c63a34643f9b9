package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Progress reports a download's advance. Done and Total count bytes of the
// current file (Total is -1 when unknown); AllDone and AllTotal count bytes
// over every file of the download.
type Progress struct {
	Repo           string // repository id, e.g. mlx-community/gemma-3n-E2B-it-4bit
	File           string // path of the current file in the repository
	FileIndex      int    // 1-based
	Files          int    // files in the download
	Done, Total    int64  // bytes of the current file
	AllDone        int64  // bytes of every file done
	AllTotal       int64  // bytes of every file
	Verifying      bool   // the file is complete and its hash is being checked
	FileCompleted  bool   // the file is in place
	AlreadyPresent bool   // the file was already in the cache
	// Waiting: another process is downloading this repository; this one
	// waits for it and then reuses its files.
	Waiting bool
}

// WantFile reports whether a repository file is needed to run a model:
// top-level *.json, *.safetensors, tokenizer.*, *.jinja and *.model files.
func WantFile(name string) bool {
	if strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return false
	}
	switch {
	case strings.HasSuffix(name, ".json"), strings.HasSuffix(name, ".safetensors"),
		strings.HasPrefix(name, "tokenizer."), strings.HasSuffix(name, ".jinja"), strings.HasSuffix(name, ".model"):
		return true
	}
	return false
}

// remoteFile is a file to fetch with what the hub says about it.
type remoteFile struct {
	name string
	size int64  // -1 when unknown
	etag string // blob id: sha256 for LFS files, git sha1 otherwise
}

type hubError struct {
	url    string
	status int
	body   string
}

func (e *hubError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.url, e.status)
	switch e.status {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (gated or private repository? set HF_TOKEN)"
	case http.StatusNotFound:
		msg += " (no such repository or revision)"
	}
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

func (o Options) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "mlxchat")
	if t := o.token(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	return req, nil
}

func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	body := strings.Join(strings.Fields(string(b)), " ")
	return &hubError{url: resp.Request.URL.String(), status: resp.StatusCode, body: body}
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// listFiles asks the hub for a revision's commit and files, with their
// sizes when the hub gives them (blobs=true).
func (o Options) listFiles(ctx context.Context, repo, rev string) (commit string, files []remoteFile, err error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", o.endpoint(), escapePath(repo), url.PathEscape(rev))
	req, err := o.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return "", nil, err
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, readError(resp)
	}
	commit, files, err = parseRevision(u, resp.Body)
	if err == nil && len(files) == 0 {
		// Some mirrors leave siblings out; the tree endpoint lists files.
		files, err = o.listTree(ctx, repo, commit)
	}
	if err != nil {
		return "", nil, err
	}
	return commit, files, nil
}

// maxListingBytes bounds a listing the hub answers with.
const maxListingBytes = 32 << 20

// parseRevision reads the hub's answer about a revision (u names it in
// errors): its commit and its files, each with its size when given (-1
// otherwise). What the files are called is the hub's to say: callers
// fetch only the names WantFile takes.
func parseRevision(u string, body io.Reader) (commit string, files []remoteFile, err error) {
	var info struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			Name string      `json:"rfilename"`
			Size *int64      `json:"size"`
			LFS  *listedSize `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxListingBytes)).Decode(&info); err != nil {
		return "", nil, fmt.Errorf("%s: bad JSON: %v", u, err)
	}
	if !commitRe.MatchString(info.SHA) {
		return "", nil, fmt.Errorf("%s: no commit sha in the answer", u)
	}
	for _, s := range info.Siblings {
		files = append(files, listedFile(s.Name, s.Size, s.LFS))
	}
	return info.SHA, files, nil
}

// listedSize is the "lfs" object of a listed file.
type listedSize struct {
	Size *int64 `json:"size"`
}

// listedFile is a listed file with its size: the LFS size, else the
// size, else -1 (unknown); a negative size is unknown too.
func listedFile(name string, size *int64, lfs *listedSize) remoteFile {
	f := remoteFile{name: name, size: -1}
	switch {
	case lfs != nil && lfs.Size != nil && *lfs.Size >= 0:
		f.size = *lfs.Size
	case size != nil && *size >= 0:
		f.size = *size
	}
	return f
}

func (o Options) listTree(ctx context.Context, repo, commit string) ([]remoteFile, error) {
	u := fmt.Sprintf("%s/api/models/%s/tree/%s", o.endpoint(), escapePath(repo), commit)
	req, err := o.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	return parseTree(u, resp.Body)
}

// parseTree reads the hub's tree listing (u names it in errors): its
// files, with their sizes as parseRevision gives them.
func parseTree(u string, body io.Reader) ([]remoteFile, error) {
	var entries []struct {
		Type string      `json:"type"`
		Path string      `json:"path"`
		Size *int64      `json:"size"`
		LFS  *listedSize `json:"lfs"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxListingBytes)).Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s: bad JSON: %v", u, err)
	}
	var files []remoteFile
	for _, e := range entries {
		if e.Type == "file" {
			files = append(files, listedFile(e.Path, e.Size, e.LFS))
		}
	}
	return files, nil
}

func (o Options) resolveURL(repo, commit, file string) string {
	return fmt.Sprintf("%s/%s/resolve/%s/%s", o.endpoint(), escapePath(repo), commit, escapePath(file))
}

func cleanETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.Trim(s, `"`)
}

var blobIDRe = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// headFile reads a file's blob id and size without following the redirect
// to the storage backend, as huggingface_hub does.
func (o Options) headFile(ctx context.Context, repo, commit, file string) (remoteFile, error) {
	u := o.resolveURL(repo, commit, file)
	req, err := o.newRequest(ctx, http.MethodHead, u)
	if err != nil {
		return remoteFile{}, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	c := *o.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return remoteFile{}, err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return remoteFile{}, &hubError{url: u, status: resp.StatusCode}
	}
	rf := remoteFile{name: file, size: -1}
	rf.etag = cleanETag(resp.Header.Get("X-Linked-Etag"))
	if rf.etag == "" {
		rf.etag = cleanETag(resp.Header.Get("ETag"))
	}
	if !blobIDRe.MatchString(rf.etag) {
		return remoteFile{}, fmt.Errorf("%s: no usable ETag (got %q)", u, rf.etag)
	}
	sizeHdr := resp.Header.Get("X-Linked-Size")
	if sizeHdr == "" && resp.StatusCode < 300 {
		sizeHdr = resp.Header.Get("Content-Length")
	}
	if sizeHdr != "" {
		if n, err := strconv.ParseInt(sizeHdr, 10, 64); err == nil && n >= 0 {
			rf.size = n
		}
	}
	return rf, nil
}

// Download fetches the files a model needs (see WantFile) from the hub into
// the Hugging Face cache layout (blobs named by their hash, snapshots/COMMIT
// holding relative symlinks to them, refs/REV naming the commit), so other
// tools reading that cache share them, and returns the snapshot directory.
// Interrupted downloads resume from BLOB.incomplete with an HTTP Range
// request; every file is checked against its size and, for LFS files, its
// sha256 (for small files, its git blob sha1). No file may grow past the
// size the hub lists for it (or a cap when it lists none), a
// download that would not fit on the disk stops before it starts, and a
// disk that fills up stops it with an error that leads with "no space left
// on device". Two downloads of one repository, in one process or several,
// take turns (a lock file under the cache's .locks): the second waits and
// then reuses what the first fetched.
func Download(ctx context.Context, repo string, opt Options) (string, error) {
	return opt.download(ctx, repo, opt.revision())
}

func (o Options) download(ctx context.Context, repo, rev string) (string, error) {
	if !IsRepoID(repo) {
		return "", fmt.Errorf("download: %q is not an ORG/NAME repo id", repo)
	}
	cache, err := o.cacheDir()
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, ".locks", repoFolder(repo), "mlxchat-download.lock"), func() {
		o.report(Progress{Repo: repo, Waiting: true, Total: -1, AllTotal: -1})
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	commit, all, err := o.listFiles(ctx, repo, rev)
	if err != nil {
		return "", fmt.Errorf("listing %s: %w", repo, err)
	}
	var files []remoteFile
	for _, f := range all {
		if WantFile(f.name) {
			files = append(files, f)
		}
	}
	// config.json first, so CheckConfig can stop the download before
	// anything else is fetched; the rest by name.
	sort.Slice(files, func(i, j int) bool {
		if ci, cj := files[i].name == "config.json", files[j].name == "config.json"; ci != cj {
			return ci
		}
		return files[i].name < files[j].name
	})
	if len(files) == 0 || files[0].name != "config.json" {
		return "", fmt.Errorf("%s@%s has no config.json: not a model repository", repo, rev)
	}
	repoDir := filepath.Join(cache, repoFolder(repo))
	snap := filepath.Join(repoDir, "snapshots", commit)
	if o.CheckConfig != nil {
		if err := o.fetchConfig(ctx, cache, repo, commit, repoDir, snap, files[0]); err != nil {
			return "", err
		}
	}
	var allTotal int64
	for i, f := range files {
		h, err := o.headFile(ctx, repo, commit, f.name)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.name, err)
		}
		if f.size >= 0 && h.size >= 0 && f.size != h.size {
			return "", fmt.Errorf("%s: the hub lists %d bytes but announces %d", f.name, f.size, h.size)
		}
		if h.size < 0 {
			h.size = f.size
		}
		files[i] = h
		if h.size < 0 || allTotal < 0 {
			allTotal = -1 // unknown: the progress shows bytes only
		} else {
			allTotal += h.size
		}
	}
	for _, d := range []string{filepath.Join(repoDir, "blobs"), snap, filepath.Join(repoDir, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", wrapWrite("creating", d, err)
		}
	}
	if err := checkFreeSpace(repoDir, files); err != nil {
		return "", err
	}
	var allDone int64
	for i, f := range files {
		p := Progress{Repo: repo, File: f.name, FileIndex: i + 1, Files: len(files), Total: f.size, AllDone: allDone, AllTotal: allTotal}
		n, err := o.fetchBlob(ctx, cache, repo, commit, repoDir, f, p)
		if err != nil {
			if errors.Is(err, errDiskFull) {
				return "", err
			}
			return "", fmt.Errorf("%s: %w", f.name, err)
		}
		allDone += n
		if err := linkSnapshot(snap, f); err != nil {
			return "", err
		}
	}
	if !commitRe.MatchString(rev) {
		ref := filepath.Join(repoDir, "refs", filepath.FromSlash(rev))
		if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
			return "", wrapWrite("creating", filepath.Dir(ref), err)
		}
		if err := writeFileAtomic(ref, []byte(commit)); err != nil {
			return "", err
		}
	}
	m := manifest{Repo: repo, Commit: commit}
	for _, f := range files {
		m.Files = append(m.Files, manifestFile{Name: f.name, Size: f.size})
	}
	if miss := missingFiles(snap, m.Files); len(miss) > 0 {
		return "", fmt.Errorf("snapshot %s is incomplete after the download: missing %s", snap, joinShort(miss))
	}
	if err := checkModelDir(snap); err != nil {
		return "", err
	}
	if err := writeManifest(repoDir, m); err != nil {
		return "", err
	}
	return snap, nil
}

// fetchConfig downloads config.json alone into the snapshot and hands it
// to CheckConfig; a refusal is an *UnsupportedError.
func (o Options) fetchConfig(ctx context.Context, cache, repo, commit, repoDir, snap string, f remoteFile) error {
	h, err := o.headFile(ctx, repo, commit, f.name)
	if err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if h.size < 0 {
		h.size = f.size
	}
	for _, d := range []string{filepath.Join(repoDir, "blobs"), snap} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return wrapWrite("creating", d, err)
		}
	}
	if _, err := o.fetchBlob(ctx, cache, repo, commit, repoDir, h, Progress{Repo: repo, File: f.name, FileIndex: 1, Files: 1, Total: h.size, AllTotal: h.size}); err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if err := linkSnapshot(snap, h); err != nil {
		return err
	}
	if err := o.CheckConfig(filepath.Join(snap, f.name)); err != nil {
		return &UnsupportedError{Repo: repo, Err: err}
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return wrapWrite("writing", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// linkSnapshot points snapshots/COMMIT/FILE at ../../blobs/ETAG (deeper
// for nested files), replacing whatever was there.
func linkSnapshot(snap string, f remoteFile) error {
	dst := filepath.Join(snap, filepath.FromSlash(f.name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return wrapWrite("creating", filepath.Dir(dst), err)
	}
	depth := strings.Count(f.name, "/") + 2
	target := path.Join(strings.Repeat("../", depth)+"blobs", f.etag)
	if cur, err := os.Readlink(dst); err == nil && cur == filepath.FromSlash(target) {
		return nil
	}
	_ = os.Remove(dst)
	if err := os.Symlink(filepath.FromSlash(target), dst); err != nil {
		return wrapWrite("linking", dst, err)
	}
	return nil
}

// maxUnknownSize caps a file whose size neither the listing nor the
// server announces: Options.MaxUnknownSize, else 256 GiB for weights and
// 1 GiB for the other (small) files.
func (o Options) maxUnknownSize(name string) int64 {
	if o.MaxUnknownSize > 0 {
		return o.MaxUnknownSize
	}
	if strings.HasSuffix(name, ".safetensors") {
		return 256 << 30
	}
	return 1 << 30
}

// fetchBlob makes blobs/ETAG complete and verified, resuming a partial
// download. It returns the file's size. The blob's lock file is the one
// huggingface_hub takes (.locks/models--ORG--NAME/ETAG.lock), so the two
// never write one blob at once.
func (o Options) fetchBlob(ctx context.Context, cache, repo, commit, repoDir string, f remoteFile, p Progress) (int64, error) {
	unlock, err := lockFile(ctx, filepath.Join(cache, ".locks", repoFolder(repo), f.etag+".lock"), func() {
		q := p
		q.Waiting = true
		o.report(q)
	})
	if err != nil {
		return 0, err
	}
	defer unlock()
	blob := filepath.Join(repoDir, "blobs", f.etag)
	if st, err := os.Stat(blob); err == nil && (f.size < 0 || st.Size() == f.size) {
		p.Done, p.Total, p.AllDone, p.FileCompleted, p.AlreadyPresent = st.Size(), st.Size(), p.AllDone+st.Size(), true, true
		o.report(p)
		return st.Size(), nil
	}
	part := blob + ".incomplete"
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, wrapWrite("opening", part, err)
	}
	defer out.Close()
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", part, err)
	}
	limit := f.size
	if limit < 0 {
		limit = o.maxUnknownSize(f.name)
	}
	if have > limit {
		if err := out.Truncate(0); err != nil {
			return 0, fmt.Errorf("%s: %w", part, err)
		}
		have, _ = out.Seek(0, io.SeekStart)
	}
	if f.size < 0 || have < f.size {
		if have, err = o.getRange(ctx, o.resolveURL(repo, commit, f.name), out, have, f.size, limit, p); err != nil {
			return 0, err
		}
	}
	if f.size >= 0 && have != f.size {
		return 0, fmt.Errorf("size mismatch: got %d bytes, want %d", have, f.size)
	}
	p.Done, p.Total, p.Verifying = have, have, true
	p.AllDone += have
	o.report(p)
	if err := verify(out, f.etag, have); err != nil {
		out.Close()
		os.Remove(part)
		return 0, err
	}
	if err := out.Close(); err != nil {
		return 0, wrapWrite("closing", part, err)
	}
	if err := os.Rename(part, blob); err != nil {
		return 0, fmt.Errorf("moving %s into place: %w", part, err)
	}
	p.Verifying, p.FileCompleted = false, true
	o.report(p)
	return have, nil
}

func (o Options) report(p Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

// getRange downloads url from offset have to the end, appending to out,
// and stops with an error when the file would grow past limit bytes (its
// listed size, or the cap for a file of unknown size).
func (o Options) getRange(ctx context.Context, u string, out *os.File, have, size, limit int64, p Progress) (int64, error) {
	req, err := o.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return have, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := o.client().Do(req)
	if err != nil {
		return have, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		var start int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-", &start); err != nil || start != have {
			return have, fmt.Errorf("%s: server resumed at %q, want byte %d", u, resp.Header.Get("Content-Range"), have)
		}
	case resp.StatusCode == http.StatusOK:
		// The server ignored the range (or none was asked): start over.
		if have > 0 {
			if err := out.Truncate(0); err != nil {
				return 0, err
			}
			have = 0
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && size >= 0 && have == size:
		return have, nil
	default:
		return have, readError(resp)
	}
	if resp.ContentLength >= 0 && have+resp.ContentLength > limit {
		return have, tooLarge(u, size, limit)
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return have, err
	}
	buf := make([]byte, 256<<10)
	var lastReport int64 = -1
	for {
		// Read at most one byte past the limit, to tell "exactly at the
		// limit" from "more".
		n, rerr := resp.Body.Read(buf[:min(int64(len(buf)), limit-have+1)])
		if n > 0 {
			if have+int64(n) > limit {
				return have, tooLarge(u, size, limit)
			}
			if _, err := out.Write(buf[:n]); err != nil {
				return have, wrapWrite("writing", out.Name(), err)
			}
			have += int64(n)
			if have-lastReport >= 1<<20 || (size >= 0 && have == size) {
				p.Done = have
				q := p
				q.AllDone += have
				o.report(q)
				lastReport = have
			}
		}
		if rerr == io.EOF {
			return have, nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return have, fmt.Errorf("download interrupted at byte %d (resumable): %w", have, ctx.Err())
			}
			return have, fmt.Errorf("download interrupted at byte %d (resumable): %w", have, rerr)
		}
	}
}

func tooLarge(u string, size, limit int64) error {
	if size >= 0 {
		return fmt.Errorf("%s: server sent more than the %d bytes the hub lists (download stopped)", u, size)
	}
	return fmt.Errorf("%s: server sent more than %d bytes for a file of unannounced size (download stopped)", u, limit)
}

// verify checks the file against its blob id: sha256 for LFS files, the
// git blob sha1 for files kept in git.
func verify(f *os.File, etag string, size int64) error {
	var h hash.Hash
	switch len(etag) {
	case 64:
		h = sha256.New()
	case 40:
		h = sha1.New()
		fmt.Fprintf(h, "blob %d\x00", size)
	default:
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("hashing %s: %w", f.Name(), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != etag {
		kind := "sha256"
		if len(etag) == 40 {
			kind = "git sha1"
		}
		return fmt.Errorf("%s mismatch: got %s, want %s (download discarded)", kind, got, etag)
	}
	return nil
}
