// Package kvcache holds per-layer key/value caches and is the single source
// of truth for attention masks: appending a chunk returns its keys, values
// and mask together, built from the live window.
//
// It may import tensor only.
package kvcache
