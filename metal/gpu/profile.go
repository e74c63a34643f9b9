package gpu

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"mlxchat/metal/kernels"
)

// Profile is the GPU timing of one step shape, the one run most often
// while profiling was on (in a decode benchmark, the decode step): its
// kept plan, or the plans of its segments (step.go's early submits).
type Profile struct {
	Timing   Timing // what was timed
	Runs     int    // timed runs of the step
	Plans    int    // plans (command buffers) per run: the step's segments
	Launches int    // launches per run
	Barriers int    // barriers per run
	// GPU is the mean GPU time of a run: the sum over its plans of each
	// one's first to last timestamp (a plan waiting for the one before it
	// or for the host to submit it is not counted).
	GPU time.Duration
	// Gaps is the mean time per run between the end of one of its plans
	// and the start of the next on the GPU's clock: the GPU waiting for
	// the host to submit the step's next segment.
	Gaps time.Duration
	// Step is the mean host time of the Sync that ran the step's last
	// plan: fusion, lowering, parameter blocks, submit, the wait for the
	// GPU and the read-back copies. The model's recording of the ops
	// before Sync, and the segments submitted meanwhile, are not in it.
	Step time.Duration
	// Kernels has one row per kernel (matrix-vector kernels per product
	// shape), most time first (TimingLaunches only).
	Kernels []KernelTime
}

// KernelTime is the GPU time of one kind of launch in a step's run.
type KernelTime struct {
	// Name is the kernel's name; matrix-vector products add their output
	// rows and inputs ("qmv4 8192x2048").
	Name     string
	Launches int           // launches per run
	Time     time.Duration // mean GPU time per run of all those launches
}

// planTimes is what a kept plan recorded while profiling knows of its
// launches, and the scratch its timestamps are read into.
type planTimes struct {
	labels   []string
	barriers int
	scratch  []float64
}

// stepTimes accumulates the timed runs of a step shape: the same plans,
// in the same order.
type stepTimes struct {
	plans    []*planEntry
	labels   []string
	barriers int
	sum      []float64 // nanoseconds per launch, summed over runs
	span     float64
	gaps     float64
	step     time.Duration
	runs     int
}

// StartProfile makes every plan recorded from now on time its runs on
// the GPU (drivers that implement LaunchTimer); kept plans are dropped so
// the next steps record timed ones. StopProfile returns the result.
func (b *Backend) StartProfile(t Timing) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	timer, ok := b.drv.(LaunchTimer)
	if !ok || b.planner == nil {
		return fmt.Errorf("%s backend: the driver cannot time plans on the GPU", b.drv.Name())
	}
	if t != TimingSpan && t != TimingLaunches {
		return fmt.Errorf("%s backend: profile timing %d: want TimingSpan or TimingLaunches", b.drv.Name(), t)
	}
	if err := timer.SetTiming(t); err != nil {
		return err
	}
	b.dropPlans()
	b.timing = t
	b.profSteps = nil
	return nil
}

// StopProfile turns timing off (kept plans are dropped and recorded again
// untimed) and returns the profile of the plan run most often since
// StartProfile.
func (b *Backend) StopProfile() (Profile, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timing == TimingOff {
		return Profile{}, errors.New("gpu profile: not started")
	}
	var best *stepTimes
	for _, p := range b.profSteps {
		if best == nil || p.runs > best.runs {
			best = p
		}
	}
	b.profSteps = nil
	pr := Profile{Timing: b.timing}
	if timer, ok := b.drv.(LaunchTimer); ok {
		if err := timer.SetTiming(TimingOff); err != nil {
			return pr, err
		}
	}
	b.dropPlans()
	b.timing = TimingOff
	if best == nil || best.runs == 0 {
		return pr, errors.New("gpu profile: no plan ran while profiling")
	}
	n := float64(best.runs)
	pr.Runs, pr.Plans, pr.Launches, pr.Barriers = best.runs, len(best.plans), len(best.labels), best.barriers
	pr.GPU = time.Duration(best.span / n)
	pr.Gaps = time.Duration(best.gaps / n)
	pr.Step = best.step / time.Duration(best.runs)
	if pr.Timing != TimingLaunches {
		return pr, nil
	}
	row := map[string]int{}
	for i, l := range best.labels {
		j, ok := row[l]
		if !ok {
			j = len(pr.Kernels)
			row[l] = j
			pr.Kernels = append(pr.Kernels, KernelTime{Name: l})
		}
		pr.Kernels[j].Launches++
		pr.Kernels[j].Time += time.Duration(best.sum[i] / n)
	}
	sort.SliceStable(pr.Kernels, func(i, j int) bool { return pr.Kernels[i].Time > pr.Kernels[j].Time })
	return pr, nil
}

// launchLabel names a launch for a profile: the kernel, with the product
// shape for matrix-vector kernels (output rows x inputs), rows x length
// for norms and the element count for elementwise ops.
func launchLabel(id kernels.ID, words []uint32) string {
	const h = kernels.ParamHeader
	if len(words) < h+2 {
		return id.String()
	}
	switch id {
	case kernels.QMV4, kernels.QMV8, kernels.QMVX4, kernels.QMVX8, kernels.QMVW4, kernels.QMVW8, kernels.QMVXW4, kernels.QMVXW8:
		return fmt.Sprintf("%s %dx%d", id, words[h+1], words[h])
	case kernels.RMSNorm, kernels.NormX:
		return fmt.Sprintf("%s %dx%d", id, words[h+1], words[h])
	case kernels.Eltwise, kernels.EltX:
		return fmt.Sprintf("%s %d", id, words[h])
	}
	return id.String()
}

// newPlanTimes prepares the timing of a plan recorded from the current
// segment's launches.
func (b *Backend) newPlanTimes() *planTimes {
	st := &b.step
	pt := &planTimes{labels: make([]string, len(st.recs)), scratch: make([]float64, len(st.recs))}
	for i, r := range st.recs {
		pt.labels[i] = launchLabel(r.id, st.words[r.w0:r.w1])
		if st.sigs[i].barrier {
			pt.barriers++
		}
	}
	return pt
}

// addTimes reads the timestamps of the plans the step just ran, which
// have finished, into the sums of its shape.
func (b *Backend) addTimes(step time.Duration) error {
	timer, ok := b.drv.(LaunchTimer)
	ran := b.step.inflight
	if !ok || len(ran) == 0 {
		return nil
	}
	for _, pe := range ran {
		if pe.times == nil {
			return nil // recorded before profiling started
		}
	}
	var g *stepTimes
	for _, x := range b.profSteps {
		if slices.Equal(x.plans, ran) {
			g = x
			break
		}
	}
	if g == nil {
		g = &stepTimes{plans: slices.Clone(ran)}
		for _, pe := range ran {
			g.labels = append(g.labels, pe.times.labels...)
			g.barriers += pe.times.barriers
		}
		g.sum = make([]float64, len(g.labels))
		b.profSteps = append(b.profSteps, g)
	}
	span, gaps, end := 0.0, 0.0, 0.0
	for i, pe := range ran {
		s, start, ok, err := timer.Times(pe.plan, pe.times.scratch)
		if err != nil || !ok {
			return err
		}
		span += s
		if i > 0 && start > end {
			gaps += start - end
		}
		end = start + s
	}
	if b.timing == TimingLaunches {
		at := 0
		for _, pe := range ran {
			for i, v := range pe.times.scratch {
				g.sum[at+i] += v
			}
			at += len(pe.times.labels)
		}
	}
	g.span += span
	g.gaps += gaps
	g.step += step
	g.runs++
	return nil
}
