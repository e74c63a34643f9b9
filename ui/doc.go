// Package ui is the bubbletea terminal chat: conversation view, input editor,
// status line with the live-window meter, slash commands and paste handling.
// It talks to the engine only through engine's request and event types and
// never touches tensors.
//
// It may import engine, themes and the charm libraries; not models, kvcache,
// tensor or metal.
package ui
