package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mlxchat/safefile"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/adrg/xdg"
)

// DefaultEndpoint is the Hugging Face hub used when neither
// Options.Endpoint nor $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// Options configure name resolution and downloads. The zero value uses the
// environment and the user's directories.
type Options struct {
	// Endpoint is the hub's base URL; default $HF_ENDPOINT, else
	// DefaultEndpoint.
	Endpoint string
	// Token is sent as a bearer token; default $HF_TOKEN, else
	// $HUGGING_FACE_HUB_TOKEN.
	Token string
	// CacheDir is the Hugging Face hub cache; default $HF_HUB_CACHE, else
	// $HF_HOME/hub, else ~/.cache/huggingface/hub.
	CacheDir string
	// DataDir holds models laid out as DataDir/ORG/NAME; default
	// $XDG_DATA_HOME/mlxchat/models (via adrg/xdg).
	DataDir string
	// Revision is the branch, tag or commit to use; default "main".
	Revision string
	// Offline forbids downloads (also when $HF_HUB_OFFLINE is 1 or true).
	Offline bool
	// Client is the HTTP client; default a client without a global timeout
	// (downloads are long; cancel through the context).
	Client *http.Client
	// MaxUnknownSize caps the download of a file whose size the hub does
	// not announce; default 256 GiB for *.safetensors, 1 GiB otherwise.
	MaxUnknownSize int64
	// Progress, when set, is called as files download.
	Progress func(Progress)
	// Getenv reads the environment; default os.Getenv. Tests replace it.
	Getenv func(string) string
	// CheckConfig, when set, is called with the path of a repository's
	// config.json as soon as it is on disk, before any other file is
	// downloaded; an error (say, a model_type this build cannot run)
	// stops the download with only config.json fetched. The error is
	// returned as an *UnsupportedError.
	CheckConfig func(configPath string) error
}

// UnsupportedError is a download stopped by Options.CheckConfig after
// fetching config.json alone.
type UnsupportedError struct {
	Repo string
	Err  error
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%v (only config.json of %s was downloaded)", e.Err, e.Repo)
}

func (e *UnsupportedError) Unwrap() error { return e.Err }

func (o Options) getenv(k string) string {
	if o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

func (o Options) endpoint() string {
	e := o.Endpoint
	if e == "" {
		e = o.getenv("HF_ENDPOINT")
	}
	if e == "" {
		e = DefaultEndpoint
	}
	return strings.TrimRight(e, "/")
}

func (o Options) token() string {
	if o.Token != "" {
		return o.Token
	}
	if t := o.getenv("HF_TOKEN"); t != "" {
		return t
	}
	return o.getenv("HUGGING_FACE_HUB_TOKEN")
}

func (o Options) revision() string {
	if o.Revision == "" {
		return "main"
	}
	return o.Revision
}

func (o Options) offline() bool {
	if o.Offline {
		return true
	}
	v := strings.ToLower(o.getenv("HF_HUB_OFFLINE"))
	return v == "1" || v == "true" || v == "yes"
}

func (o Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{}
}

// CacheDir returns the Hugging Face hub cache directory in use.
func (o Options) cacheDir() (string, error) {
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	if d := o.getenv("HF_HUB_CACHE"); d != "" {
		return d, nil
	}
	if d := o.getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub"), nil
	}
	home := o.getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("finding the Hugging Face cache: %w (set HF_HOME)", err)
		}
	}
	return filepath.Join(home, ".cache", "huggingface", "hub"), nil
}

func (o Options) dataDir() string {
	if o.DataDir != "" {
		return o.DataDir
	}
	return filepath.Join(xdg.DataHome, "mlxchat", "models")
}

// Alias is a short model name.
type Alias struct {
	Name string // what the user types, lower case
	Repo string // the mlx-community repository it stands for
	// ModelType is the repository's config.json model_type (aliases exist
	// only for families this build runs; models' tests check that).
	ModelType string
}

// aliases lists the short names. Repositories are the mlx-community
// conversions seen on the hub or referenced in public code
// (FAMILIES.md §8).
func aliases() []Alias {
	var out []Alias
	add := func(modelType, repo string, names ...string) {
		for _, n := range names {
			out = append(out, Alias{Name: n, Repo: "mlx-community/" + repo, ModelType: modelType})
		}
	}
	add("gemma3n", "gemma-3n-E2B-it-4bit", "gemma3n-e2b", "gemma3n-e2b-4bit")
	add("gemma3n", "gemma-3n-E2B-it-8bit", "gemma3n-e2b-8bit")
	add("gemma3n", "gemma-3n-E2B-it-bf16", "gemma3n-e2b-bf16")
	add("gemma3n", "gemma-3n-E4B-it-4bit", "gemma3n-e4b", "gemma3n-e4b-4bit")
	add("gemma3n", "gemma-3n-E4B-it-8bit", "gemma3n-e4b-8bit")
	add("gemma3n", "gemma-3n-E4B-it-bf16", "gemma3n-e4b-bf16")
	add("gemma3_text", "gemma-3-1b-it-4bit", "gemma3-1b", "gemma3-1b-4bit", "gemma-3-1b-it-4bit")
	add("gemma3_text", "gemma-3-1b-it-qat-4bit", "gemma3-1b-qat", "gemma-3-1b-it-qat")
	add("gemma3", "gemma-3-4b-it-4bit", "gemma3-4b", "gemma3-4b-4bit", "gemma-3-4b-it-4bit")
	add("gemma3", "gemma-3-4b-it-qat-4bit", "gemma3-4b-qat", "gemma-3-4b-it-qat")
	add("gemma3", "gemma-3-12b-it-4bit", "gemma3-12b", "gemma3-12b-4bit")
	add("gemma3", "gemma-3-12b-it-qat-4bit", "gemma3-12b-qat")
	add("gemma3", "gemma-3-27b-it-4bit", "gemma3-27b-4bit")
	add("gemma3", "gemma-3-text-27b-it-4bit", "gemma3-text-27b-4bit")
	add("llama", "Llama-3.2-1B-Instruct-4bit", "llama3.2-1b", "llama3.2-1b-4bit", "llama-3.2-1b-instruct-4bit")
	add("llama", "Llama-3.2-3B-Instruct-4bit", "llama3.2-3b", "llama3.2-3b-4bit", "llama-3.2-3b-instruct-4bit")
	add("llama", "Meta-Llama-3.1-8B-Instruct-4bit", "llama3.1-8b", "llama3.1-8b-4bit", "llama-3.1-8b-instruct-4bit")
	add("qwen3", "Qwen3-0.6B-4bit", "qwen3-0.6b", "qwen3-0.6b-4bit")
	add("qwen3", "Qwen3-1.7B-4bit", "qwen3-1.7b", "qwen3-1.7b-4bit")
	add("qwen3", "Qwen3-4B-4bit", "qwen3-4b", "qwen3-4b-4bit")
	add("qwen3", "Qwen3-8B-4bit", "qwen3-8b", "qwen3-8b-4bit")
	add("qwen3", "Qwen3-14B-4bit", "qwen3-14b", "qwen3-14b-4bit")
	add("qwen3", "Qwen3-0.6B-8bit", "qwen3-0.6b-8bit")
	add("qwen3", "Qwen3-1.7B-8bit", "qwen3-1.7b-8bit")
	add("qwen3", "Qwen3-4B-8bit", "qwen3-4b-8bit")
	add("qwen3", "Qwen3-8B-8bit", "qwen3-8b-8bit")
	add("qwen3", "Qwen3-4B-Instruct-2507-4bit", "qwen3-4b-instruct-2507-4bit")
	add("olmo3", "Olmo-3-7B-Instruct-4bit", "olmo3-7b", "olmo3-7b-4bit", "olmo3-7b-instruct-4bit")
	add("olmo3", "Olmo-3-7B-Think-4bit", "olmo3-7b-think-4bit")
	add("cohere2", "c4ai-command-r7b-12-2024-4bit", "command-r7b", "command-r7b-4bit")
	return out
}

// Aliases returns the short model names, sorted by name.
func Aliases() []Alias {
	out := aliases()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ExpandAlias maps a short name (case-insensitive), or the bare name of an
// aliased mlx-community repository ("gemma-3n-E2B-it-4bit"), to its repo id.
func ExpandAlias(name string) (repo string, ok bool) {
	all := aliases()
	lower := strings.ToLower(name)
	for _, a := range all {
		if a.Name == lower {
			return a.Repo, true
		}
	}
	for _, a := range all {
		if strings.EqualFold(a.Repo[strings.IndexByte(a.Repo, '/')+1:], name) {
			return a.Repo, true
		}
	}
	return "", false
}

var repoIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// IsRepoID reports whether s has the form ORG/NAME of a hub repository.
func IsRepoID(s string) bool { return repoIDRe.MatchString(s) && !strings.Contains(s, "..") }

// looksLikePath reports whether the user clearly meant a filesystem path.
func looksLikePath(s string) bool {
	if strings.Contains(s, "://") || strings.HasPrefix(s, "huggingface.co/") || strings.HasPrefix(s, "hf.co/") {
		return false
	}
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") ||
		strings.HasPrefix(s, "~") || s == "." || s == ".." || strings.Contains(s, string(filepath.Separator)+string(filepath.Separator)) ||
		strings.Count(s, "/") > 1
}

// Resolution says where a model came from.
type Resolution struct {
	// Dir is the model directory to open.
	Dir string
	// Repo is the hub repository id; "" for a local path.
	Repo string
	// Source is "path", "hf-cache", "data-dir" or "download".
	Source string

	// verified: an hf-cache snapshot was checked against the repository's
	// file list (its manifest), not only for its structure.
	verified bool
}

// Locate finds a model without downloading: a local directory, else (for
// an alias or ORG/NAME) a complete snapshot in the Hugging Face cache, else
// DataDir/ORG/NAME. searched lists the places looked at.
func Locate(name string, opt Options) (res Resolution, searched []string, err error) {
	if name == "" {
		return res, nil, errors.New("empty model name")
	}
	path := name
	if strings.HasPrefix(path, "~/") {
		if home := opt.getenv("HOME"); home != "" {
			path = filepath.Join(home, path[2:])
		}
	}
	if st, statErr := os.Stat(path); statErr == nil && st.IsDir() {
		if err := checkModelDir(path); err != nil {
			return res, []string{path}, err
		}
		return Resolution{Dir: path, Source: "path"}, []string{path}, nil
	} else if looksLikePath(name) {
		if statErr == nil {
			return res, []string{path}, fmt.Errorf("model %s: not a directory", name)
		}
		return res, []string{path}, fmt.Errorf("model directory %s: %w", name, safefile.Unwrap(statErr))
	}
	repo, err := RepoID(name)
	if err != nil {
		return res, nil, err
	}
	cache, err := opt.cacheDir()
	if err != nil {
		return res, nil, err
	}
	repoDir := filepath.Join(cache, repoFolder(repo))
	searched = append(searched, repoDir)
	dir, verified, incomplete := findSnapshot(repoDir, opt.revision())
	if dir != "" && incomplete == nil {
		return Resolution{Dir: dir, Repo: repo, Source: "hf-cache", verified: verified}, searched, nil
	}
	data := filepath.Join(opt.dataDir(), filepath.FromSlash(repo))
	searched = append(searched, data)
	if checkModelDir(data) == nil {
		return Resolution{Dir: data, Repo: repo, Source: "data-dir"}, searched, nil
	}
	if incomplete != nil {
		return Resolution{Repo: repo}, searched, &notFound{incomplete}
	}
	return Resolution{Repo: repo}, searched, fs.ErrNotExist
}

// notFound is Locate's error when the only copy of a model is an
// incomplete snapshot: it is fs.ErrNotExist (a download completes it) and
// says what is missing.
type notFound struct{ why error }

func (e *notFound) Error() string        { return e.why.Error() }
func (e *notFound) Is(target error) bool { return target == fs.ErrNotExist }

// RepoID turns a model argument that is not a path into a repo id: an
// alias, an ORG/NAME id, or a hub URL (https://huggingface.co/ORG/NAME).
func RepoID(name string) (string, error) {
	n := name
	for _, p := range []string{"https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf.co/"} {
		n = strings.TrimPrefix(n, p)
	}
	n = strings.TrimSuffix(n, "/")
	if r, ok := ExpandAlias(n); ok {
		return r, nil
	}
	if IsRepoID(n) {
		return n, nil
	}
	return "", fmt.Errorf("model %q is not a directory, a known alias (gemma3n-e2b-4bit, qwen3-4b-4bit, ...) or an ORG/NAME Hugging Face repo id", name)
}

// Resolve finds a model (see Locate) and, when it is not on disk and
// downloads are allowed, downloads it from the hub into the Hugging Face
// cache. A cached snapshot that no download of ours has checked (another
// tool made it) is checked once against the hub's file list, and missing
// files are fetched; when the hub cannot be reached the cache is used as
// it is. A name that resolves to nothing gives one line saying where it
// looked and why the download failed.
func Resolve(ctx context.Context, name string, opt Options) (Resolution, error) {
	res, searched, err := Locate(name, opt)
	if err == nil {
		if res.Source == "hf-cache" && !res.verified && !opt.offline() {
			return opt.completeSnapshot(ctx, res)
		}
		return res, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || res.Repo == "" {
		return res, err
	}
	where := strings.Join(searched, ", ")
	var nf *notFound
	if errors.As(err, &nf) {
		where += "; " + nf.Error()
	}
	if opt.offline() {
		return res, fmt.Errorf("model %s not found (looked in %s) and downloads are off (offline)", displayName(name, res.Repo), where)
	}
	dir, derr := Download(ctx, res.Repo, opt)
	if derr != nil {
		var ue *UnsupportedError
		if errors.As(derr, &ue) {
			return res, fmt.Errorf("model %s: %w", displayName(name, res.Repo), derr)
		}
		if errors.Is(derr, errDiskFull) {
			// The cause leads, so a cut-off line still shows it.
			var df *diskFullError
			errors.As(derr, &df)
			return res, fmt.Errorf("%w (downloading model %s)", df, displayName(name, res.Repo))
		}
		return res, fmt.Errorf("model %s not found (looked in %s); download failed: %w", displayName(name, res.Repo), where, derr)
	}
	return Resolution{Dir: dir, Repo: res.Repo, Source: "download", verified: true}, nil
}

// verifyTimeout bounds the one listing request that checks a snapshot
// made by another tool, so an unreachable hub delays the start little.
const verifyTimeout = 10 * time.Second

// completeSnapshot checks a cached snapshot without a manifest against the
// hub's file list for its commit: when nothing is missing it records the
// manifest, else it downloads the missing files. A hub that cannot be
// reached leaves the snapshot as it is.
func (o Options) completeSnapshot(ctx context.Context, res Resolution) (Resolution, error) {
	commit := filepath.Base(res.Dir)
	repoDir := filepath.Dir(filepath.Dir(res.Dir))
	lctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	_, listed, err := o.listFiles(lctx, res.Repo, commit)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, nil
	}
	var want []manifestFile
	for _, f := range listed {
		if WantFile(f.name) {
			want = append(want, manifestFile{Name: f.name, Size: f.size})
		}
	}
	if len(missingFiles(res.Dir, want)) == 0 {
		// Recording is an optimisation: a cache we cannot write to still works.
		_ = writeManifest(repoDir, manifest{Repo: res.Repo, Commit: commit, Files: want})
		res.verified = true
		return res, nil
	}
	dir, err := o.download(ctx, res.Repo, commit)
	if err != nil {
		return res, fmt.Errorf("completing the cached snapshot %s: %w", res.Dir, err)
	}
	return Resolution{Dir: dir, Repo: res.Repo, Source: "download", verified: true}, nil
}

func displayName(name, repo string) string {
	if name == repo {
		return repo
	}
	return fmt.Sprintf("%s (%s)", name, repo)
}

// repoFolder is the cache folder of a model repo: models--ORG--NAME.
func repoFolder(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}

var commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

// findSnapshot returns the snapshot directory of a cached repo for a
// revision (a commit hash, or a ref under refs/), "" when there is none,
// and incomplete saying what is missing when it is not complete (see
// checkSnapshot).
func findSnapshot(repoDir, rev string) (dir string, verified bool, incomplete error) {
	commit := rev
	if !commitRe.MatchString(rev) {
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", filepath.FromSlash(rev)))
		if err != nil {
			return "", false, nil
		}
		commit = strings.TrimSpace(string(b))
		if !commitRe.MatchString(commit) {
			return "", false, nil
		}
	}
	dir = filepath.Join(repoDir, "snapshots", commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", false, nil
	}
	verified, incomplete = checkSnapshot(repoDir, commit)
	return dir, verified, incomplete
}
