package models_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mlxchat/models"
	"mlxchat/models/hub"
)

// Every short name stands for a family this build loads, and CheckConfig
// (what the hub runs on config.json before downloading weights) accepts
// exactly the types Load does, listing them when it refuses one.
func TestAliasesAndCheckConfig(t *testing.T) {
	known := models.KnownModelTypes()
	for _, a := range hub.Aliases() {
		if !slices.Contains(known, a.ModelType) {
			t.Errorf("alias %s -> %s names model_type %q, which Load does not support", a.Name, a.Repo, a.ModelType)
		}
	}
	dir := t.TempDir()
	for _, mt := range append(known, "olmo2", "") {
		p := filepath.Join(dir, "config.json")
		if err := os.WriteFile(p, []byte(`{"model_type":"`+mt+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		err := models.CheckConfig(p)
		switch {
		case slices.Contains(known, mt) && err != nil:
			t.Errorf("%q refused: %v", mt, err)
		case mt == "olmo2" && (err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), strings.Join(slices.Sorted(slices.Values(known)), ", "))):
			t.Errorf("olmo2: error %v, want the file and the supported types", err)
		case mt == "" && err == nil:
			t.Error("empty model_type accepted")
		}
	}
}
