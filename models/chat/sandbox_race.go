//go:build race

package chat

// raceEnabled: the race detector's shadow memory needs a huge address
// space, so the renderer child does not cap it (the memory watchdog stays).
const raceEnabled = true
