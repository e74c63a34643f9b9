package themes

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

func TestGet(t *testing.T) {
	tests := []struct {
		name, want, glamour string
		noColor, wantErr    bool
	}{
		{name: "", want: "dark", glamour: "dark"},
		{name: "dark", want: "dark", glamour: "dark"},
		{name: "LIGHT", want: "light", glamour: "light"},
		{name: " high-contrast ", want: "high-contrast", glamour: "dark"},
		{name: "light", noColor: true, want: "light", glamour: "notty"},
		{name: "solarized", wantErr: true},
	}
	for _, tc := range tests {
		th, err := Get(tc.name, tc.noColor)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "high-contrast") {
				t.Errorf("Get(%q): err %v, want an error listing the themes", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Get(%q): %v", tc.name, err)
		}
		if th.Name != tc.want || th.Glamour != tc.glamour {
			t.Errorf("Get(%q) = %s/%s, want %s/%s", tc.name, th.Name, th.Glamour, tc.want, tc.glamour)
		}
		_, plain := th.UserLabel.GetForeground().(lipgloss.NoColor)
		if plain != tc.noColor {
			t.Errorf("Get(%q, noColor=%v): user label foreground %v", tc.name, tc.noColor, th.UserLabel.GetForeground())
		}
		if tc.noColor && th.Progress != "" {
			t.Errorf("Get(%q, noColor): progress colour %q, want none", tc.name, th.Progress)
		}
		if !tc.noColor && th.Progress == "" {
			t.Errorf("Get(%q): no progress colour", tc.name)
		}
	}
}

func TestNoColorDropsColours(t *testing.T) {
	for _, n := range Names() {
		th, err := Get(n, true)
		if err != nil {
			t.Fatal(err)
		}
		for name, st := range map[string]lipgloss.Style{"Error": th.Error, "Trimmed": th.Trimmed, "Cut": th.Cut, "Fold": th.Fold} {
			if got := st.Render("x"); strings.Contains(got, "\x1b[3") || strings.Contains(got, "38;") {
				t.Errorf("theme %s with NO_COLOR renders colour escapes in %s: %q", n, name, got)
			}
		}
	}
}

func TestNamesSorted(t *testing.T) {
	n := Names()
	if len(n) < 3 {
		t.Fatalf("want at least 3 themes, got %v", n)
	}
	for i := 1; i < len(n); i++ {
		if n[i-1] >= n[i] {
			t.Errorf("names not sorted: %v", n)
		}
	}
}
