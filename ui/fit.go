package ui

import (
	"fmt"
	"strings"

	"mlxchat/engine"
)

// fitMargin is the room kept for the template's tokens after a message
// (its end of turn and the reply header) when the UI decides on its own
// that a message fits the live window.
const fitMargin = 16

// fitCheck is the FitCheck in flight for the message in the editor (or
// the held message), before it is sent.
type fitCheck struct {
	id   engine.RequestID // 0 = none
	text string           // the editor text checked (labels)
	// held says the check is for the held message, after a settings
	// change: its answer only updates the notice.
	held bool
}

// heldMessage is a message the fit check stopped because part of it
// would fall outside the live window. It waits outside the editor, which
// is free for /summarize or /kv; Enter on an empty editor sends it
// anyway, Esc puts it back into the editor, and it is saved with the
// draft.
type heldMessage struct {
	text   string       // as in the editor (paste labels)
	pastes []pasteBlock // the pastes behind its labels
	fit    engine.Fit
}

// full is the held message's exact text.
func (h *heldMessage) full() string {
	p := pasteSet{blocks: h.pastes}
	return p.expand(h.text)
}

// heldPlaceholder is the editor's hint while a message is held under f:
// it offers "/kv N raises the cap" only when the engine suggests a cap
// that lets more of it in (none when the cap is the model's context
// length already, which no /kv can raise).
func heldPlaceholder(f engine.Fit) string {
	kv := ""
	if f.SuggestedMaxKV > 0 {
		kv = fmt.Sprintf(" · /kv %d raises the cap", f.SuggestedMaxKV)
	}
	return "Enter sends the held message anyway · /summarize summarizes it in pieces" + kv + " · Esc puts it back"
}

// mayNotFit reports whether a message of text (exact) could push part of
// itself out of the live window (the cap, or with no cap the model's
// context length), so that it must be checked before it is sent. A token covers at least one byte, so a message whose bytes fit in
// the window beside the sink and the pins fits; only longer ones (or any
// under a cap too small to tell) ask the engine.
func (m *model) mayNotFit(text string) bool {
	s := m.set.cur.Normalize()
	c := m.liveCap(s)
	if c <= 0 {
		return false
	}
	never := s.SinkTokens
	if s.KeepSystem {
		never += len(s.System)
	}
	return len(text)+fitMargin > c-never-m.pinnedBound()
}

// liveCap is the live window's cap under s, as the engine enforces it:
// MaxKV, or with no cap the model's context length (0 before the model
// has loaded or when its config gives none: unlimited).
func (m *model) liveCap(s engine.Settings) int {
	return s.LiveCap(m.info.ContextLength)
}

// pinnedBound is an upper bound of the tokens the pinned messages keep:
// each one's token count where its Layout span gives it, else its bytes
// (a token covers at least one byte).
func (m *model) pinnedBound() int {
	n := 0
	for i := range m.tr.turns {
		t := &m.tr.turns[i]
		if !t.isMessage() || !t.pinned {
			continue
		}
		if t.span != nil {
			n += t.span.Tokens.Len()
		} else {
			n += len(m.tr.sentContent(i))
		}
	}
	return n
}

// startFitCheck asks the engine whether the message in the editor fits;
// the message stays in the editor until the answer (fitted) comes.
func (m *model) startFitCheck(full string) {
	conv, _ := m.tr.conversation()
	conv = append(conv, engine.Message{Role: engine.RoleUser, Content: full})
	m.fit = fitCheck{id: m.sess.eng.Submit(engine.FitCheck{Conversation: conv}), text: m.ed.value()}
	m.setNotice("checking that the message fits the live window…")
}

// recheckHeld checks the held message again under new settings.
func (m *model) recheckHeld(s engine.Settings) {
	if m.held == nil {
		return
	}
	conv, _ := m.tr.conversation()
	conv = append(conv, engine.Message{Role: engine.RoleUser, Content: m.held.full()})
	m.fit = fitCheck{id: m.sess.eng.Submit(engine.FitCheck{Conversation: conv, Settings: &s}), held: true}
}

// fitted takes the answer of the fit check: a message that fits is sent,
// one that does not is held with a notice that says what the model would
// see and what to do. An answer for a message edited meanwhile is
// dropped.
func (m *model) fitted(f engine.Fit) {
	if f.Superseded || f.ID != m.fit.id || m.fit.id == 0 {
		return
	}
	fc := m.fit
	m.fit = fitCheck{}
	if fc.held {
		if m.held != nil {
			m.held.fit = f
			if f.Fits {
				m.setNotice(fmt.Sprintf("the held %s fits the live window now (%s tokens): Enter sends it", m.heldWhat(), groupDigits(f.MessageTokens)))
			} else {
				m.st.setWarning(fitNotice(m.heldWhat(), f))
			}
		}
		return
	}
	if m.ed.value() != fc.text || m.phase != phaseIdle {
		if m.st.notice.text == "checking that the message fits the live window…" {
			m.st.clearNotice()
		}
		return
	}
	if f.Fits {
		m.send()
		return
	}
	m.held = &heldMessage{text: m.ed.value(), pastes: m.ed.present(), fit: f}
	m.ed.clear()
	m.refreshPlaceholder()
	m.afterEdit()
	m.st.setWarning(fitNotice(m.heldWhat(), f))
	m.saveDraft(true)
}

// fitFailed handles an Error answering the fit check: the message is sent
// (the Generate reports a real problem itself).
func (m *model) fitFailed() {
	fc := m.fit
	m.fit = fitCheck{}
	if !fc.held && m.ed.value() == fc.text && m.phase == phaseIdle {
		m.send()
	}
}

// heldWhat names the held message for notices: "paste" when it is one
// collapsed paste, else "message".
func (m *model) heldWhat() string {
	if h := m.held; h != nil && len(h.pastes) == 1 && strings.TrimSpace(h.text) == h.pastes[0].Label {
		return "paste"
	}
	return "message"
}

// fitNotice is the fit check's warning, e.g. "paste 35,120 tokens > live
// window 4,096: the model would see only the last 3,900. Enter sends
// anyway · /summarize summarizes it in pieces · /kv 40000 raises the cap
// (≈ 1.2 GB of KV)". With no cap the window is the model's context length
// ("live window 2,048 (the model's context)"), which /kv cannot usefully
// raise.
func fitNotice(what string, f engine.Fit) string {
	var b strings.Builder
	window := groupDigits(f.LiveCap)
	if f.MaxKV <= 0 {
		window += " (the model's context)"
	}
	fmt.Fprintf(&b, "%s %s tokens > live window %s: the model would see only the last %s. Enter sends anyway",
		what, groupDigits(f.MessageTokens), window, groupDigits(f.Visible))
	b.WriteString(" · /summarize summarizes it in pieces")
	if f.SuggestedMaxKV > 0 {
		fmt.Fprintf(&b, " · /kv %d raises the cap (≈ %s of KV", f.SuggestedMaxKV, formatBytes(f.SuggestedKVBytes))
		if f.ContextLength > 0 && f.SuggestedMaxKV > f.ContextLength {
			fmt.Fprintf(&b, "; beyond the model's %s-token context", groupDigits(f.ContextLength))
		}
		b.WriteString(")")
	}
	b.WriteString(" · Esc puts it back in the editor")
	return b.String()
}

// releaseHeld puts the held message back into the editor, above what was
// typed meanwhile.
func (m *model) releaseHeld() {
	h := m.held
	m.held = nil
	m.refreshPlaceholder()
	text, blocks := h.text, append([]pasteBlock(nil), h.pastes...)
	if cur := m.ed.value(); cur != "" {
		text += "\n" + cur
		blocks = append(blocks, m.ed.present()...)
	}
	m.ed.set(text, blocks)
	m.afterEdit()
}
