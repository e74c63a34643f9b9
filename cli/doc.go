// Package cli is mlxchat's command line: flag parsing with one-line errors,
// the chat (TUI), run, bench, list, rm, version (also --version) and help
// subcommands, model resolution with a download progress bar, and backend
// selection.
//
// It may import engine, ui, models (and their sub-packages), tensor, the
// backends, bytesize (sizes, formatted as the chat formats them) and
// textinput (run's prompt and document are checked as the chat's /read
// checks a file); main.go only calls Main.
package cli
