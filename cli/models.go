package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"mlxchat/bytesize"
	"mlxchat/models"
	"mlxchat/models/checkpoint"
	"mlxchat/models/hub"
	"mlxchat/tensor"
	"mlxchat/tensor/cpu"
)

// modelRow is one line of `mlxchat list`.
type modelRow struct {
	name, family, quant, size, loads string
}

// describeModel reads what `list` shows about a cached model: its family
// (config.json model_type), its quantization, and whether this build can
// load it on be (a known model_type, a complete snapshot, and then
// models.Check: every check the load makes, on the weights' headers,
// tokenizer and chat template, without reading the weights), with the
// first reason, on one line, when it cannot.
func describeModel(m hub.CachedModel, known []string, be tensor.Backend) modelRow {
	row := modelRow{name: m.Repo, family: "?", quant: "?", size: bytesize.Format(m.Bytes), loads: "yes"}
	if m.Source == "data-dir" {
		row.name += " (data dir)"
	}
	if m.Snapshots > 1 {
		row.name += fmt.Sprintf(" (%d revisions)", m.Snapshots)
	}
	no := func(why string) modelRow {
		if row.loads == "yes" {
			row.loads = "no: " + strings.Join(strings.Fields(why), " ")
		}
		return row
	}
	cfg, err := checkpoint.LoadConfig(filepath.Join(m.Dir, checkpoint.ConfigFile))
	if err != nil {
		return no("unreadable config.json")
	}
	mt, err := cfg.ModelType()
	if err != nil {
		return no("config.json has no model_type")
	}
	row.family = mt
	q, err := checkpoint.ParseQuantization(cfg)
	switch {
	case err != nil:
		row.quant = "unsupported"
		no("quantization not supported")
	case q != nil:
		row.quant = fmt.Sprintf("%d-bit g%d", q.Default.Bits, q.Default.GroupSize)
	default:
		row.quant = "dense"
	}
	if !slices.Contains(known, mt) {
		return no("model_type " + mt + " not supported")
	}
	if m.Incomplete != nil {
		return no("incomplete (" + shortReason(m.Incomplete, m.Dir) + ")")
	}
	ck, err := checkpoint.OpenHeaders(m.Dir)
	if err != nil {
		return no(shortReason(err, m.Dir))
	}
	if row.quant == "dense" {
		row.quant = "dense " + strings.ToLower(mainDType(ck))
	}
	ck.Close()
	if err := models.Check(m.Dir, be); err != nil {
		return no(shortReason(err, m.Dir))
	}
	return row
}

// mainDType is the dtype holding most of a checkpoint's bytes.
func mainDType(ck *checkpoint.Checkpoint) string {
	bytes := map[string]int64{}
	best := ""
	for _, n := range ck.Names() {
		info, _ := ck.Info(n)
		bytes[info.RawDType] += info.Bytes()
		if best == "" || bytes[info.RawDType] > bytes[best] {
			best = info.RawDType
		}
	}
	return best
}

// shortReason is err's message without the model directory it names.
func shortReason(err error, dir string) string {
	s := err.Error()
	dir = filepath.Clean(dir)
	for _, p := range []string{"loading " + dir + ": ", "model directory " + dir + ": ", "snapshot " + dir + " is incomplete: ", dir + string(filepath.Separator)} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// listCmd prints the models of the Hugging Face cache and the data dir.
func listCmd(w io.Writer) error {
	opt := hub.Options{}
	cache, data, err := hub.CacheDirs(opt)
	if err != nil {
		return err
	}
	list, err := hub.List(opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Hugging Face cache: %s\ndata dir:           %s\n\n", cache, data)
	if len(list) == 0 {
		fmt.Fprintln(w, "no models yet: `mlxchat MODEL` downloads one (e.g. mlxchat gemma3n-e2b-4bit)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tFAMILY\tQUANT\tSIZE\tLOADS")
	known := models.KnownModelTypes()
	be := cpu.New(1) // models.Check builds each model on it without running it
	defer be.Close()
	for _, m := range list {
		r := describeModel(m, known, be)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.family, r.quant, r.size, r.loads)
	}
	return tw.Flush()
}

// rmCmd removes a cached model (see hub.Remove) and says what went.
func rmCmd(ctx context.Context, name string, w io.Writer) error {
	removed, err := hub.Remove(ctx, name, hub.Options{})
	for _, m := range removed {
		fmt.Fprintf(w, "removed %s (%s): %s\n", m.Repo, bytesize.Format(m.Bytes), m.Root)
	}
	return err
}
