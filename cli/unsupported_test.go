package cli

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A model whose config.json names a model_type this build does not run is
// refused after downloading config.json alone, with the supported types in
// the one-line error.
func TestResolveRefusesUnsupportedModelType(t *testing.T) {
	const repo = "mlx-community/c4ai-command-r7b-12-2024-4bit"
	config := []byte(`{"model_type":"olmo2"}`)
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(config))
	h.Write(config)
	etag := hex.EncodeToString(h.Sum(nil))
	commit := strings.Repeat("cd34", 10)
	var mu sync.Mutex
	var fetched []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/models/"+repo+"/revision/"):
			fmt.Fprintf(w, `{"sha":%q,"siblings":[{"rfilename":"config.json","size":%d},{"rfilename":"model.safetensors","size":1000000,"lfs":{"size":1000000}},{"rfilename":"tokenizer.json","size":10}]}`, commit, len(config))
		case r.URL.Path == "/"+repo+"/resolve/"+commit+"/config.json":
			mu.Lock()
			fetched = append(fetched, r.Method+" config.json")
			mu.Unlock()
			w.Header().Set("ETag", `"`+etag+`"`)
			w.Header().Set("Content-Length", fmt.Sprint(len(config)))
			if r.Method == http.MethodGet {
				w.Write(config)
			}
		default:
			mu.Lock()
			fetched = append(fetched, r.Method+" "+r.URL.Path)
			mu.Unlock()
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "")
	_, err := resolveModel(context.Background(), "command-r7b-4bit", hubClient(hubDialTimeout, hubHeaderTimeout), nil)
	msg := fmt.Sprint(err)
	t.Log(msg)
	for _, want := range []string{"command-r7b-4bit", `model_type "olmo2" not supported`, "cohere2, gemma3", "llama", "qwen3", "only config.json of " + repo + " was downloaded"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("error is not one line: %q", msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(fetched, ",") != "HEAD config.json,GET config.json" {
		t.Fatalf("requests beyond the listing: %q", fetched)
	}
}
