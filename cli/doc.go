// Package cli is mlxchat's command line: flag parsing with one-line errors,
// the chat (TUI), run, bench, list, rm, version (also --version) and help
// subcommands, model resolution with a download progress bar, and backend
// selection.
//
// It may import engine, ui, models (and their sub-packages), tensor, the
// backends and bytesize (sizes, formatted as the chat formats them);
// main.go only calls Main.
package cli
