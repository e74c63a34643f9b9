// Package themes holds the lipgloss colour themes of the chat UI.
//
// It may import lipgloss only.
package themes
