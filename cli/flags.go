package cli

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// flagSpec describes one command-line flag.
type flagSpec struct {
	name   string
	want   string // what a valid value looks like, for errors and help
	usage  string
	isBool bool
	set    func(v string) error
}

// flagSet is a small flag parser: it accepts -name and --name, "=value" or
// a separate value, flags before or after positional arguments, and "--"
// to end flags. Errors are one line naming the flag and what was expected.
type flagSet struct {
	specs map[string]*flagSpec
	order []*flagSpec
}

func newFlagSet() *flagSet { return &flagSet{specs: map[string]*flagSpec{}} }

func (f *flagSet) add(s *flagSpec) {
	f.specs[s.name] = s
	f.order = append(f.order, s)
}

// Int registers an integer flag with a lower bound.
func (f *flagSet) Int(p *int, name string, lo int, want, usage string) {
	f.add(&flagSpec{name: name, want: want, usage: usage, set: func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo {
			return fmt.Errorf("want %s", want)
		}
		*p = n
		return nil
	}})
}

// Uint registers an unsigned 64-bit flag.
func (f *flagSet) Uint(p *uint64, name, want, usage string) {
	f.add(&flagSpec{name: name, want: want, usage: usage, set: func(v string) error {
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("want %s", want)
		}
		*p = n
		return nil
	}})
}

// Float registers a float flag within [lo, hi].
func (f *flagSet) Float(p *float64, name string, lo, hi float64, want, usage string) {
	f.add(&flagSpec{name: name, want: want, usage: usage, set: func(v string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || x < lo || x > hi {
			return fmt.Errorf("want %s", want)
		}
		*p = x
		return nil
	}})
}

// String registers a string flag; allowed, when non-empty, lists the
// accepted values.
func (f *flagSet) String(p *string, name string, allowed []string, want, usage string) {
	f.add(&flagSpec{name: name, want: want, usage: usage, set: func(v string) error {
		if len(allowed) > 0 {
			ok := false
			for _, a := range allowed {
				ok = ok || a == v
			}
			if !ok {
				return fmt.Errorf("want %s", want)
			}
		}
		*p = v
		return nil
	}})
}

// Bool registers a boolean flag (--x, --x=true, --x=false).
func (f *flagSet) Bool(p *bool, name, usage string) {
	f.add(&flagSpec{name: name, want: "true or false", usage: usage, isBool: true, set: func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		*p = b
		return nil
	}})
}

// IntList registers a comma-separated list of positive integers.
func (f *flagSet) IntList(p *[]int, name, want, usage string) {
	f.add(&flagSpec{name: name, want: want, usage: usage, set: func(v string) error {
		var out []int
		for _, part := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n <= 0 {
				return fmt.Errorf("want %s", want)
			}
			out = append(out, n)
		}
		*p = out
		return nil
	}})
}

// parse sets the flags found in args and returns the positional arguments.
func (f *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		val, hasVal := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = k, v, true
		}
		spec, ok := f.specs[name]
		if !ok {
			typed, _, _ := strings.Cut(a, "=")
			if hint := f.suggest(name); hint != "" {
				return nil, fmt.Errorf("unknown flag %s: did you mean %s? (see mlxchat --help)", typed, hint)
			}
			return nil, fmt.Errorf("unknown flag %s (see mlxchat --help)", typed)
		}
		if !hasVal {
			if spec.isBool {
				val = "true"
			} else {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("flag --%s needs a value: %s", name, spec.want)
				}
				i++
				val = args[i]
			}
		}
		if err := spec.set(val); err != nil {
			return nil, fmt.Errorf("flag --%s: %v, got %q", name, err, val)
		}
	}
	return pos, nil
}

// suggest names the flags a mistyped name probably meant: those it is a
// prefix of (up to four, e.g. -p for --prompt), else the one closest to it
// by edit distance when that is at most 2; "" when nothing is close.
func (f *flagSet) suggest(name string) string {
	var prefixed []string
	for _, s := range f.order {
		if strings.HasPrefix(s.name, name) {
			prefixed = append(prefixed, "--"+s.name)
		}
	}
	sort.Strings(prefixed)
	if len(prefixed) > 4 {
		prefixed = prefixed[:4]
	}
	if len(prefixed) > 0 {
		return strings.Join(prefixed, ", ")
	}
	best, bestD := "", 3
	for _, s := range f.order {
		if d := editDistance(name, s.name); d < bestD {
			best, bestD = "--"+s.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// usage lists the flags, sorted by name.
func (f *flagSet) usage() string {
	specs := append([]*flagSpec(nil), f.order...)
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	var b strings.Builder
	for _, s := range specs {
		arg := " " + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
		if s.isBool {
			arg = ""
		}
		fmt.Fprintf(&b, "  --%s%s\n      %s\n", s.name, arg, s.usage)
	}
	return b.String()
}
