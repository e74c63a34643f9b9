package kvcache

import (
	"fmt"
	"math"

	"mlxchat/tensor"
)

// MaxRewind is the largest n that Rewind accepts now (0 while a chunk is
// open). It is limited by the global layers, which can drop only keys that
// are still live (not trimmed away, not in the sink), and by the sliding
// layers, which must get back the window-1 keys before the new Offset from
// their live keys and their rewind slack (Options.RewindSlack).
func (c *Cache) MaxRewind() int {
	n, _ := c.maxRewind()
	return n
}

// CanRewind reports whether Rewind(n) would succeed: n <= MaxRewind(),
// or n goes back exactly to the anchor (see Anchor).
func (c *Cache) CanRewind(n int) bool {
	return n >= 0 && (n <= c.MaxRewind() || n == c.AnchorRewind())
}

// Anchor marks the current Offset A as a point Rewind can always return
// to, however far the cache has moved on since, as long as the global
// layers still hold every position from A on (nothing at or after A was
// trimmed) and the sliding windows have not grown since: each sliding layer
// that owns its cache copies the window-1 keys before A aside (the rows a
// rewind to A needs, which would otherwise slide out of reach of the
// rewind slack). A document summarized in pieces anchors after the shared
// prefix and rewinds to it for every piece. One anchor at a time: Anchor
// replaces the previous one; Rewind to before A, ClearAnchor and Reset
// drop it. Its copies are counted in Stats.Bytes. It fails while a chunk
// is open.
func (c *Cache) Anchor() error {
	if c.open {
		return fmt.Errorf("kvcache: Anchor while a chunk is open; call it between chunks")
	}
	c.anchor = c.offset
	for i := range c.layers {
		if l := &c.layers[i]; l.st != nil && l.spec.Window > 0 {
			l.st.saveAnchor(c.window(l.spec) - 1)
		}
	}
	return nil
}

// ClearAnchor drops the anchor and frees its copies.
func (c *Cache) ClearAnchor() {
	c.anchor = -1
	for i := range c.layers {
		if st := c.layers[i].st; st != nil {
			st.an = anchorRows{}
		}
	}
}

// AnchorRewind is the n for which Rewind(n) goes back to the anchor, or -1
// when there is no anchor or it cannot be reached now (a chunk is open,
// positions at or after it were trimmed, a sliding window grew beyond the
// keys saved).
func (c *Cache) AnchorRewind() int {
	if c.anchor < 0 || c.open {
		return -1
	}
	n := c.offset - c.anchor
	for i := range c.layers {
		l := &c.layers[i]
		if l.st == nil {
			continue
		}
		if l.spec.Window == 0 {
			if l.st.newestRun(c.offset) < n {
				return -1
			}
		} else if need := min(c.window(l.spec)-1, c.anchor); l.st.an.m < need {
			return -1
		}
	}
	return n
}

// ExactRewind is the largest n for which Rewind(n) also undoes no trim:
// no global trim happened since the chunk holding position Offset()-n
// began. It is MaxRewind() when nothing was ever trimmed (MaxKV 0), and
// usually 0 while decoding at the cap (every step trims). See Rewind.
func (c *Cache) ExactRewind() int {
	return max(0, min(c.MaxRewind(), c.offset-c.trimEnd))
}

// maxRewind returns MaxRewind and, when it is below Offset, what limits it.
func (c *Cache) maxRewind() (int, string) {
	if c.open {
		return 0, "a chunk is open"
	}
	best, why := c.offset, ""
	for i := range c.layers {
		l := &c.layers[i]
		if l.st == nil {
			continue
		}
		var n int
		var reason string
		if l.spec.Window == 0 {
			n = l.st.newestRun(c.offset)
			reason = fmt.Sprintf("layer %d has trimmed the tokens before the last %d to fit max-kv-size %d", i, n, c.maxKV)
		} else {
			// Rewinding to t needs positions [max(0, t-(we-1)), t):
			// t >= earliest + we-1, unless nothing was ever dropped or
			// the window is one key (it needs nothing before t).
			w := c.window(l.spec)
			if a := l.st.earliest(c.offset); a > 0 && w > 1 {
				n = max(0, c.offset-(a+w-1))
			} else {
				n = math.MaxInt
			}
			reason = fmt.Sprintf("sliding layer %d (window %d) keeps %d keys beyond its window for rewinding (rewind slack)", i, w, l.st.sl.max)
		}
		if n < best {
			best, why = n, reason
		}
	}
	return best, why
}

// Rewind drops the last n committed tokens from every layer in lockstep:
// Offset() goes back by n, and the next chunk is appended (and rotated) at
// the new Offset T = Offset()-n, as if those tokens had never been
// appended. It is the way to reuse a cache whose token history diverges
// from a new prompt at position T (mlx-lm's trim_prompt_cache, llama.cpp's
// keep-the-common-prefix). n == 0 does nothing.
//
// Per layer:
//   - A global layer drops the rows of positions [T, Offset()). They must
//     all still be live: a rewind into keys already trimmed away (or into
//     the sink after a trim) is impossible.
//   - A sliding layer is left holding the window-1 keys before T, exactly
//     what any chunk ending at T leaves it, taken from its live keys and
//     the keys it kept out of view after they slid out (at most
//     Options.RewindSlack of them). When the window was lowered and the
//     layer still holds older keys, those stay until the next Begin.
//   - Shared layers follow their source.
//
// Trims are never undone; Stats.Trimmed, the sink and its state stay. When
// n <= ExactRewind() (always, if nothing was ever trimmed), no trim
// happened since the chunk holding position T began, so with the settings
// (MaxKV, sink) unchanged since then the cache is exactly in the state it
// had when its Offset was T (for a T inside a chunk: the state that chunk
// would have left had it ended at T); appending the same tokens again gives
// the same views, and appending others gives what a cache fed only them
// after the first T tokens gives. Beyond ExactRewind, the keys the later
// trims dropped stay dropped: the global layers hold the sink and a run of
// recent keys ending at T that is shorter than a cache fed the first T
// tokens in the same chunks would hold. That state is still valid (every
// invariant holds and the next chunks trim as usual); it is the one a cache
// reaches when its cap was briefly lowered.
//
// Rewind fails, changing nothing, while a chunk is open, for n < 0 or
// n > Offset(), or when n > MaxRewind(): the error says what limits it;
// the caller then resets the cache instead.
func (c *Cache) Rewind(n int) error {
	if c.open {
		return fmt.Errorf("kvcache: cannot rewind %d tokens while a chunk of %d tokens is open; call Commit or Abort first", n, c.n)
	}
	if n < 0 || n > c.offset {
		return fmt.Errorf("kvcache: cannot rewind %d tokens: want 0 to %d (the tokens appended)", n, c.offset)
	}
	if n == 0 {
		return nil
	}
	m, why := c.maxRewind()
	toAnchor := n > m && n == c.AnchorRewind()
	if n > m && !toAnchor {
		if c.anchor >= 0 {
			why += fmt.Sprintf(" (and the anchor at %d is %d tokens back)", c.anchor, c.offset-c.anchor)
		}
		return fmt.Errorf("kvcache: cannot rewind %d tokens, at most %d: %s; reset the cache instead", n, m, why)
	}
	to := c.offset - n
	for i := range c.layers {
		l := &c.layers[i]
		if l.st == nil {
			continue
		}
		switch {
		case l.spec.Window == 0:
			l.st.dropNewestKept(n)
		case toAnchor:
			l.st.restoreAnchor()
		default:
			l.st.rewindSliding(to, max(0, to-(c.window(l.spec)-1)))
		}
	}
	c.offset = to
	c.trimEnd = min(c.trimEnd, to)
	c.pins = cutSpans(c.pins, to)
	if c.anchor > to {
		c.ClearAnchor()
	}
	return nil
}

// cutSpans returns the positions of spans below end (nil for none).
func cutSpans(spans []tensor.Span, end int) []tensor.Span {
	var out []tensor.Span
	for _, r := range spans {
		if r.Start >= end {
			break
		}
		r.Len = min(r.Len, end-r.Start)
		out = append(out, r)
	}
	return out
}
