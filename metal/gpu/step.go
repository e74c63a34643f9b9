package gpu

import (
	"fmt"
	"slices"
	"sort"
	"time"
	"unsafe"

	"mlxchat/metal/kernels"
	"mlxchat/tensor"
)

// A step is everything recorded between two Syncs. Ops append launch
// records (kernel, bindings, parameter words, the byte ranges each binding
// reads or writes); Sync lowers them to the driver's launches, adds a
// barrier only where a launch touches memory an earlier launch since the
// last barrier wrote (or writes what one read), and runs them: on a
// Planner from a plan kept for the step's shape (same kernels, grids,
// bindings and barriers), after rewriting the parameter blocks only, else
// one launch at a time through Dispatch.
//
// Early submits: on a Planner (fusion off), the launches recorded so far
// are handed over as a segment of the step, lowered and submitted as a
// plan of their own, while the model is still recording the rest, so the
// GPU works on the first layers while the host records the later ones
// (recording an E2B decode step takes about 1.6 ms of host time on the
// device machine, during which the GPU sat idle). A segment ends just
// before a launch that chain never folds into or moves an op past
// (attention, a copy: see volatile), once at least cutAt launches are
// recorded: the first segment is short, so the GPU starts early, and
// later ones grow. Segments split a step at the same launches every time
// the model records the same step, so each keeps its own plan and chain
// rewrite. Sync submits the last segment and waits once for all of them;
// activations a segment writes are read back (remote drivers) at that
// Sync, when every segment has run.

// access is a byte range [lo, hi) of buf that a launch reads or writes; st
// is the activation allocation it lies in (nil for weights, staging and
// scratch).
type access struct {
	buf    Buf
	lo, hi int64
	write  bool
	weight bool // a weight in memory the driver maps in place (maybe read-only)
	st     *bufState
}

// launchRec is one recorded launch: its parameter words are
// stepState.words[w0:w1] (header first), its accesses acc[a0:a1].
type launchRec struct {
	id     kernels.ID
	binds  [8]Binding
	boff   [8]int64 // byte offset of each slot's operand in its buffer
	groups [3]int
	w0, w1 int32
	a0, a1 int32
}

// sig is what must match for a kept plan to run a step: everything but the
// parameter blocks.
type sig struct {
	id      kernels.ID
	binds   [8]bindKey
	groups  [3]int
	barrier bool
	psize   int
}

// bindKey identifies a Binding by its buffer's address: comparing sigs
// then compares integers, not interfaces (which cost a runtime call each,
// 8 per launch of every step). A kept plan holds its Bindings (planEntry.
// binds), so no buffer it names is collected and its address reused while
// it is kept; and buffers go back to the driver only after dropPlans.
type bindKey struct {
	buf          uintptr
	offset, size int64
}

func keyOf(bs *[8]Binding) (k [8]bindKey) {
	for i, b := range bs {
		if b.Buf != nil {
			k[i] = bindKey{bufOrder(b.Buf), b.Offset, b.Size}
		}
	}
	return k
}

// planEntry is a plan the driver recorded, with the step shape it runs.
type planEntry struct {
	plan    Plan
	mem     []byte
	sigs    []sig
	binds   [][8]Binding // the launches' bindings (see bindKey)
	hash    uint64
	lastUse int64
	times   *planTimes // GPU timing (recorded while profiling), else nil
}

// maxPlans bounds the plans kept: the segments of a decode step and of a
// few prefill chunk shapes.
const maxPlans = 64

type stepState struct {
	recs    []launchRec
	words   []uint32
	acc     []access
	uploads []*bufState

	plans []*planEntry
	clock int64
	// inflight lists the plans submitted since the last driver Flush, in
	// submission order: this step's segments. None of them is matched
	// again or released before the Flush.
	inflight []*planEntry
	// back collects the activation ranges the step's segments wrote, read
	// back at Sync (remote drivers); discard holds the ranges of tensors
	// whose host copy is not wanted (Backend.Discard), left out of it.
	back, discard []CopyRegion
	// segs counts the step's early submits; the next comes before the
	// first volatile launch once cutAt launches are recorded.
	segs, cutAt int

	// reused scratch of fuse: fused launches (the first nfused in use),
	// the fused step's items and records
	fpool  []*fusedLaunch
	nfused int
	items  []fitem
	frecs  []launchRec

	// reused scratch of runStep
	sigs     []sig
	offs     []int
	pbuf     []byte
	launches []Launch
	regions  []CopyRegion
	epochR   []access
	epochW   []access
}

// dropPlans releases every kept plan; called when a buffer they may bind
// goes away. Plans run inside runStep, which waits for them, and as
// early-submitted segments of the step being recorded, which it waits for
// first.
func (b *Backend) dropPlans() {
	if len(b.step.inflight) > 0 {
		// Segments of the step being recorded are running: wait for them
		// before releasing their plans (their results stay in place).
		if err := b.drv.Flush(); err != nil {
			b.fail(fmt.Errorf("%s backend: waiting for submitted launches: %w", b.drv.Name(), err))
		}
		b.step.inflight = b.step.inflight[:0]
	}
	for _, p := range b.step.plans {
		if b.planner != nil {
			b.planner.ReleasePlan(p.plan)
		}
	}
	b.step.plans = nil
	// The kept chain rewrites name buffers too.
	clear(b.chains.cache)
	b.chains.cache = b.chains.cache[:0]
}

// Early submit sizes, in recorded launches: the first segment of a step
// and the cap the later ones double up to.
const (
	firstSegment = 64
	maxSegment   = 512
)

// earlyCut reports whether a launch of kernel id with these parameter
// words (without the header), about to be recorded, should start a new
// segment, the launches recorded before it being submitted now.
func (b *Backend) earlyCut(id kernels.ID, words []uint32) bool {
	st := &b.step
	if b.noEarly || b.planner == nil || b.fusion != FuseOff || len(st.recs) < max(st.cutAt, firstSegment) {
		return false
	}
	switch id {
	case kernels.Attn, kernels.AttnD, kernels.AttnMerge:
		return true
	case kernels.Eltwise:
		return len(words) > 2 && words[2] == opCopy
	}
	return false
}

// submitEarly submits the launches recorded so far as a segment of the
// step (see the comment at the top); an error is Sync's.
func (b *Backend) submitEarly() {
	st := &b.step
	n := len(st.recs)
	if err := b.segment(b.stats.Syncs); err != nil {
		b.fail(fmt.Errorf("%s backend: running %d recorded launches: %w", b.drv.Name(), n, err))
	}
	st.segs++
	st.cutAt = min(firstSegment<<st.segs, maxSegment)
	b.stats.EarlySubmits++
}

// segment lowers the launches recorded since the last segment (chains or
// fusion first), submits them after the uploads they need and notes what
// they write for the read-back; now is the Sync count that Alloc gave the
// step's own allocations (chain's bornNow).
func (b *Backend) segment(now int64) error {
	st := &b.step
	defer func() {
		st.recs, st.words, st.acc, st.uploads = st.recs[:0], st.words[:0], st.acc[:0], st.uploads[:0]
	}()
	if b.fusion != FuseOff {
		b.fuse()
	} else if !b.noChains {
		b.chains.now = now
		b.chain()
	}
	err := b.upload()
	if err == nil {
		err = b.run()
	}
	if err == nil {
		b.noteWrites()
	}
	return err
}

// runStep hands the recorded launches to the driver and waits for them,
// and for the segments submitted early.
func (b *Backend) runStep() error {
	st := &b.step
	defer func() {
		st.recs, st.words, st.acc, st.uploads = st.recs[:0], st.words[:0], st.acc[:0], st.uploads[:0]
		st.inflight, st.back, st.discard = st.inflight[:0], st.back[:0], st.discard[:0]
		st.segs, st.cutAt = 0, firstSegment
	}()
	if len(st.recs) == 0 && len(st.uploads) == 0 && len(st.inflight) == 0 && len(st.back) == 0 {
		return nil
	}
	b.stats.Flushes++
	t0 := time.Now()
	n := len(st.recs)
	err := b.segment(b.stats.Syncs - 1)
	if err == nil {
		err = b.readBack()
	}
	if ferr := b.drv.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	if err == nil && b.timing != TimingOff {
		err = b.addTimes(time.Since(t0))
	}
	if err != nil {
		return fmt.Errorf("%s backend: running %d recorded launches: %w", b.drv.Name(), n, err)
	}
	return nil
}

// upload copies the host bytes of activations used for the first time to
// their device twins, except where the step's first access to them writes
// them whole (a freshly allocated output such as logits).
func (b *Backend) upload() error {
	st := &b.step
	if len(st.uploads) == 0 {
		return nil
	}
	regions := st.regions[:0]
	for _, u := range st.uploads {
		if b.overwrittenFirst(u) {
			continue
		}
		regions = append(regions, CopyRegion{Src: u.ch.buf, Dst: u.ch.dev, SrcOff: u.off, DstOff: u.off, Size: int64(u.n)})
		b.stats.TwinUploads += int64(u.n)
	}
	st.regions = regions[:0]
	if len(regions) == 0 {
		return nil
	}
	return b.remote.Copy(regions)
}

// overwrittenFirst reports whether the first launch touching u writes all
// of its requested bytes without reading them.
func (b *Backend) overwrittenFirst(u *bufState) bool {
	st := &b.step
	lo, hi := u.off, u.off+int64(u.n)
	for _, r := range st.recs {
		touched, whole := false, false
		for _, a := range st.acc[r.a0:r.a1] {
			if a.st != u {
				continue
			}
			touched = true
			if !a.write {
				return false
			}
			if a.lo <= lo && a.hi >= hi {
				whole = true
			}
		}
		if touched {
			return whole
		}
	}
	return false
}

// noteWrites adds every activation range the segment just submitted
// writes to the step's read-back (remote drivers).
func (b *Backend) noteWrites() {
	if b.remote == nil {
		return
	}
	st := &b.step
	// The launches as run: st.acc also holds the accesses of launches
	// chain folded away and, after a replay, those a rebuilt launch had
	// when its rewrite was kept (a logits tensor of an earlier step).
	for _, r := range st.recs {
		for _, a := range st.acc[r.a0:r.a1] {
			if a.write && a.st != nil && !a.st.internal {
				ch := a.st.ch
				st.back = append(st.back, CopyRegion{Src: ch.dev, Dst: ch.buf, SrcOff: a.lo, DstOff: a.lo, Size: a.hi - a.lo})
			}
		}
	}
}

// readBack copies every activation range the step wrote from the device
// twins to the host mappings (remote drivers), after all its segments.
func (b *Backend) readBack() error {
	st := &b.step
	if b.remote == nil || len(st.back) == 0 {
		return nil
	}
	regions := st.back
	sort.Slice(regions, func(i, j int) bool {
		ri, rj := &regions[i], &regions[j]
		if ri.Dst != rj.Dst {
			return bufOrder(ri.Dst) < bufOrder(rj.Dst)
		}
		return ri.SrcOff < rj.SrcOff
	})
	merged := regions[:1]
	for _, r := range regions[1:] {
		last := &merged[len(merged)-1]
		if r.Dst == last.Dst && r.SrcOff <= last.SrcOff+last.Size {
			last.Size = max(last.Size, r.SrcOff+r.Size-last.SrcOff)
			continue
		}
		merged = append(merged, r)
	}
	merged = b.dropDiscarded(merged)
	if len(merged) == 0 {
		return nil
	}
	for _, r := range merged {
		b.stats.TwinReadback += r.Size
	}
	st.back = merged[:0]
	return b.remote.Copy(merged)
}

// dropDiscarded removes the step's discarded ranges from the read-back
// regions rs (sorted and merged), cutting a region in two where a range
// lies inside it.
func (b *Backend) dropDiscarded(rs []CopyRegion) []CopyRegion {
	for _, d := range b.step.discard {
		lo, hi := d.SrcOff, d.SrcOff+d.Size
		out := rs[:0:0]
		for _, r := range rs {
			if r.Src != d.Src || r.SrcOff >= hi || r.SrcOff+r.Size <= lo {
				out = append(out, r)
				continue
			}
			b.stats.DiscardedBytes += min(hi, r.SrcOff+r.Size) - max(lo, r.SrcOff)
			if r.SrcOff < lo {
				head := r
				head.Size = lo - r.SrcOff
				out = append(out, head)
			}
			if end := r.SrcOff + r.Size; end > hi {
				tail := r
				tail.SrcOff, tail.DstOff, tail.Size = hi, r.DstOff+(hi-r.SrcOff), end-hi
				out = append(out, tail)
			}
		}
		rs = out
	}
	return rs
}

// Discard tells the backend that the host will not read t's Data after
// the next Sync (its values only feed ops recorded in this step, such as
// the logits an Argmax reads): on remote drivers that Sync copies back
// nothing the step wrote into t, so Data keeps older bytes. Ops recorded
// later still read t's current values on the GPU. Elsewhere (Data is the
// GPU's memory, or t is not an activation) it changes nothing.
func (b *Backend) Discard(t *tensor.Tensor) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.remote == nil || t == nil || len(t.Data) == 0 {
		return
	}
	st := b.activation(t)
	if st == nil || st.ch.dev == nil {
		return
	}
	lo := st.off + int64(dataPtr(t.Data)-st.base)
	b.step.discard = append(b.step.discard, CopyRegion{Src: st.ch.dev, SrcOff: lo, Size: int64(len(t.Data))})
}

// bufOrder orders buffers for merging copy regions (any fixed order will
// do: the dynamic values are pointers).
func bufOrder(x Buf) uintptr {
	type iface struct{ typ, ptr unsafe.Pointer }
	return uintptr((*iface)(unsafe.Pointer(&x)).ptr)
}

// run lowers the launches, places barriers, and runs them.
func (b *Backend) run() error {
	st := &b.step
	if len(st.recs) == 0 {
		return nil
	}
	align := 16
	if b.planner != nil {
		align = max(align, b.planner.ParamAlign())
	}
	st.sigs, st.offs, st.pbuf = st.sigs[:0], st.offs[:0], st.pbuf[:0]
	st.epochR, st.epochW = st.epochR[:0], st.epochW[:0]
	h := uint64(14695981039346656037)
	for _, r := range st.recs {
		acc := st.acc[r.a0:r.a1]
		barrier := b.hazard(acc)
		words := st.words[r.w0:r.w1]
		off := (len(st.pbuf) + align - 1) &^ (align - 1)
		for len(st.pbuf) < off {
			st.pbuf = append(st.pbuf, 0)
		}
		st.pbuf = append(st.pbuf, unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 4*len(words))...)
		st.offs = append(st.offs, off)
		s := sig{id: r.id, binds: keyOf(&r.binds), groups: r.groups, barrier: barrier, psize: 4 * len(words)}
		st.sigs = append(st.sigs, s)
		for _, v := range [...]uint64{uint64(s.id), uint64(s.groups[0]), uint64(s.groups[1]), uint64(s.groups[2]), uint64(s.psize)} {
			h = (h ^ v) * 1099511628211
		}
		if barrier {
			h = (h ^ 1) * 1099511628211
			b.stats.Barriers++
		}
	}
	b.stats.Dispatches += int64(len(st.recs))
	if b.planner == nil {
		for i, s := range st.sigs {
			binds := st.recs[i].binds
			if err := b.drv.Dispatch(s.id, st.pbuf[st.offs[i]:st.offs[i]+s.psize], &binds, s.groups); err != nil {
				return fmt.Errorf("recording %s: %w", s.id, err)
			}
		}
		return nil
	}
	st.clock++
	var pe *planEntry
	for _, p := range st.plans {
		if p.hash == h && len(p.sigs) == len(st.sigs) && !slices.Contains(st.inflight, p) && sameSigs(p.sigs, st.sigs) {
			pe = p
			break
		}
	}
	if pe == nil {
		launches := st.launches[:0]
		binds := make([][8]Binding, len(st.sigs))
		for i, s := range st.sigs {
			binds[i] = st.recs[i].binds
			launches = append(launches, Launch{Kernel: s.id, Binds: binds[i], Groups: s.groups, Params: st.offs[i], ParamSize: s.psize, Barrier: s.barrier})
		}
		st.launches = launches[:0]
		plan, mem, err := b.planner.NewPlan(launches, len(st.pbuf))
		if err != nil {
			return err
		}
		if len(st.plans) >= maxPlans {
			oldest := -1
			for i, p := range st.plans {
				if (oldest < 0 || p.lastUse < st.plans[oldest].lastUse) && !slices.Contains(st.inflight, p) {
					oldest = i
				}
			}
			if oldest >= 0 {
				b.planner.ReleasePlan(st.plans[oldest].plan)
				st.plans = append(st.plans[:oldest], st.plans[oldest+1:]...)
			}
		}
		pe = &planEntry{plan: plan, mem: mem, sigs: append([]sig(nil), st.sigs...), binds: binds, hash: h}
		if b.timing != TimingOff {
			pe.times = b.newPlanTimes()
		}
		st.plans = append(st.plans, pe)
		b.stats.PlanRecords++
	} else {
		b.stats.PlanRuns++
	}
	pe.lastUse = st.clock
	copy(pe.mem, st.pbuf)
	st.inflight = append(st.inflight, pe)
	return b.planner.RunPlan(pe.plan)
}

func sameSigs(a, b []sig) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// maxEpoch bounds the accesses tracked since the last barrier (a barrier
// is forced beyond it, keeping the hazard check cheap).
const maxEpoch = 96

// hazard reports whether a launch with these accesses must wait for the
// launches since the last barrier, and adds them to the current epoch
// (starting a new one when it must).
func (b *Backend) hazard(acc []access) bool {
	st := &b.step
	barrier := len(st.epochR)+len(st.epochW)+len(acc) > maxEpoch
	for _, a := range acc {
		if barrier {
			break
		}
		for _, w := range st.epochW {
			if w.buf == a.buf && a.lo < w.hi && w.lo < a.hi {
				barrier = true
				break
			}
		}
		if a.write && !barrier {
			for _, r := range st.epochR {
				if r.buf == a.buf && a.lo < r.hi && r.lo < a.hi {
					barrier = true
					break
				}
			}
		}
	}
	if barrier {
		st.epochR, st.epochW = st.epochR[:0], st.epochW[:0]
	}
	for _, a := range acc {
		if a.write {
			st.epochW = append(st.epochW, a)
		} else {
			st.epochR = append(st.epochR, a)
		}
	}
	return barrier
}
