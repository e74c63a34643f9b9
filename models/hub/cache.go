package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mlxchat/safefile"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CachedModel is a model found in the Hugging Face cache or the data dir.
type CachedModel struct {
	// Repo is the repository id, ORG/NAME.
	Repo string
	// Source is "hf-cache" or "data-dir".
	Source string
	// Dir is the model directory: the snapshot refs/main (or the newest
	// snapshot) points at, or the data-dir folder.
	Dir string
	// Root is what Remove deletes: models--ORG--NAME in the cache, or the
	// data-dir folder.
	Root string
	// Bytes is the disk space Root takes (blobs and partial downloads
	// included).
	Bytes int64
	// Snapshots counts the cached revisions (1 for the data dir).
	Snapshots int
	// Incomplete says what the model lacks; nil when it is complete.
	Incomplete error
}

// CacheDirs returns the Hugging Face cache and the data dir in use.
func CacheDirs(opt Options) (cache, data string, err error) {
	cache, err = opt.cacheDir()
	return cache, opt.dataDir(), err
}

// List returns the models of the Hugging Face cache (models--ORG--NAME
// folders with a snapshot holding config.json) and of the data dir
// (ORG/NAME folders holding config.json), sorted by repository id. A
// directory that does not exist lists nothing.
func List(opt Options) ([]CachedModel, error) {
	cache, data, err := CacheDirs(opt)
	if err != nil {
		return nil, err
	}
	var out []CachedModel
	entries, err := os.ReadDir(cache)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing %s: %w", cache, safefile.Unwrap(err))
	}
	for _, e := range entries {
		repo, ok := repoFromFolder(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if m, ok := cachedRepo(cache, repo, opt.revision()); ok {
			out = append(out, m)
		}
	}
	orgs, err := os.ReadDir(data)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing %s: %w", data, safefile.Unwrap(err))
	}
	for _, org := range orgs {
		if !org.IsDir() {
			continue
		}
		if flat := filepath.Join(data, org.Name()); isFile(filepath.Join(flat, "config.json")) {
			// A checkpoint copied straight into the data dir: shown, so it
			// is not silently ignored, with what to do about it.
			out = append(out, CachedModel{Repo: org.Name(), Source: "data-dir", Dir: flat, Root: flat,
				Bytes: diskUsage(flat), Snapshots: 1,
				Incomplete: fmt.Errorf("not in the data dir's ORG/NAME layout: move it to %s, or run it by its path", filepath.Join(data, "local", org.Name()))})
			continue
		}
		names, _ := os.ReadDir(filepath.Join(data, org.Name()))
		for _, n := range names {
			repo := org.Name() + "/" + n.Name()
			dir := filepath.Join(data, org.Name(), n.Name())
			if !n.IsDir() || !IsRepoID(repo) || !isFile(filepath.Join(dir, "config.json")) {
				continue
			}
			out = append(out, CachedModel{Repo: repo, Source: "data-dir", Dir: dir, Root: dir,
				Bytes: diskUsage(dir), Snapshots: 1, Incomplete: checkModelDir(dir)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !strings.EqualFold(out[i].Repo, out[j].Repo) {
			return strings.ToLower(out[i].Repo) < strings.ToLower(out[j].Repo)
		}
		return out[i].Source < out[j].Source
	})
	return out, nil
}

// repoFromFolder maps models--ORG--NAME to ORG/NAME.
func repoFromFolder(folder string) (string, bool) {
	rest, ok := strings.CutPrefix(folder, "models--")
	if !ok {
		return "", false
	}
	org, name, ok := strings.Cut(rest, "--")
	repo := org + "/" + name
	return repo, ok && IsRepoID(repo) && repoFolder(repo) == folder
}

// cachedRepo describes one models--ORG--NAME folder: the snapshot of rev
// when it has one, else the newest snapshot holding config.json.
func cachedRepo(cache, repo, rev string) (CachedModel, bool) {
	repoDir := filepath.Join(cache, repoFolder(repo))
	m := CachedModel{Repo: repo, Source: "hf-cache", Root: repoDir}
	snaps, _ := os.ReadDir(filepath.Join(repoDir, "snapshots"))
	var newest os.FileInfo
	for _, s := range snaps {
		if !s.IsDir() || !commitRe.MatchString(s.Name()) {
			continue
		}
		m.Snapshots++
		if st, err := os.Stat(filepath.Join(repoDir, "snapshots", s.Name(), "config.json")); err == nil {
			if newest == nil || st.ModTime().After(newest.ModTime()) {
				newest, m.Dir = st, filepath.Join(repoDir, "snapshots", s.Name())
			}
		}
	}
	if dir, _, incomplete := findSnapshot(repoDir, rev); dir != "" && isFile(filepath.Join(dir, "config.json")) {
		m.Dir, m.Incomplete = dir, incomplete
	} else if m.Dir != "" {
		_, m.Incomplete = checkSnapshot(repoDir, filepath.Base(m.Dir))
	}
	if m.Dir == "" {
		return m, false
	}
	m.Bytes = diskUsage(repoDir)
	return m, true
}

// diskUsage adds up the sizes of the regular files under dir, links not
// followed (a blob is counted once, not once per snapshot).
func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Remove deletes the cached copies of a model: name is resolved as the
// chat resolves it (an alias, ORG/NAME, a hub URL), or it is a path to a
// model inside the Hugging Face cache or the data dir. Every copy of the
// repository is removed (the whole models--ORG--NAME folder with its blobs
// and lock files, and DataDir/ORG/NAME); anything else, such as a model
// directory elsewhere, is refused. A repository that is being downloaded
// is not removed. It returns what was removed.
func Remove(ctx context.Context, name string, opt Options) ([]CachedModel, error) {
	cache, data, err := CacheDirs(opt)
	if err != nil {
		return nil, err
	}
	repo, err := repoToRemove(name, cache, data)
	if err != nil {
		return nil, err
	}
	var removed []CachedModel
	repoDir := filepath.Join(cache, repoFolder(repo))
	if st, err := os.Lstat(repoDir); err == nil && st.IsDir() {
		unlock, err := tryLock(filepath.Join(cache, ".locks", repoFolder(repo), "mlxchat-download.lock"))
		if err != nil {
			return nil, fmt.Errorf("%s is being downloaded (lock held); try again when it is done", repo)
		}
		m := CachedModel{Repo: repo, Source: "hf-cache", Root: repoDir, Bytes: diskUsage(repoDir)}
		err = os.RemoveAll(repoDir)
		unlock()
		if err != nil {
			return removed, fmt.Errorf("removing %s: %w", repoDir, err)
		}
		os.RemoveAll(filepath.Join(cache, ".locks", repoFolder(repo)))
		removed = append(removed, m)
	}
	dataDir := filepath.Join(data, filepath.FromSlash(repo))
	if st, err := os.Lstat(dataDir); err == nil && st.IsDir() && isFile(filepath.Join(dataDir, "config.json")) {
		m := CachedModel{Repo: repo, Source: "data-dir", Root: dataDir, Bytes: diskUsage(dataDir)}
		if err := os.RemoveAll(dataDir); err != nil {
			return removed, fmt.Errorf("removing %s: %w", dataDir, err)
		}
		os.Remove(filepath.Dir(dataDir)) // the ORG folder, when now empty
		removed = append(removed, m)
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("model %s (%s) is not in the Hugging Face cache (%s) or the data dir (%s)", name, repo, cache, data)
	}
	return removed, nil
}

// repoToRemove maps a name or a path inside the caches to a repo id.
func repoToRemove(name, cache, data string) (string, error) {
	if name == "" {
		return "", errors.New("empty model name")
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() || looksLikePath(name) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		for _, root := range []string{cache, data} {
			r, err := filepath.Abs(root)
			if err != nil {
				continue
			}
			rel, err := filepath.Rel(r, abs)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			parts := strings.Split(filepath.ToSlash(rel), "/")
			if root == cache {
				// models--ORG--NAME, or a snapshot inside it.
				if repo, ok := repoFromFolder(parts[0]); ok && (len(parts) == 1 || (len(parts) == 3 && parts[1] == "snapshots")) {
					return repo, nil
				}
			} else if len(parts) == 2 && IsRepoID(parts[0]+"/"+parts[1]) {
				return parts[0] + "/" + parts[1], nil
			}
		}
		return "", fmt.Errorf("%s is not a model folder of the Hugging Face cache (%s) or the data dir (%s); not removed", name, cache, data)
	}
	return RepoID(name)
}

// tryLock takes the lock at path without waiting.
func tryLock(path string) (unlock func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	return lockFile(ctx, path, cancel)
}
