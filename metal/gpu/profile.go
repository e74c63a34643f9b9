package gpu

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"mlxchat/metal/kernels"
)

// Profile is the GPU timing of one kept plan, the one run most often while
// profiling was on (in a decode benchmark, the decode step).
type Profile struct {
	Timing   Timing        // what was timed
	Runs     int           // timed runs of the plan
	Launches int           // launches per run
	Barriers int           // barriers per run
	GPU      time.Duration // mean GPU time of a run, first to last timestamp
	// Step is the mean host time of the Sync that ran the plan: fusion,
	// lowering, parameter blocks, submit, the wait for the GPU and the
	// read-back copies. The model's recording of the ops before Sync is
	// not in it.
	Step time.Duration
	// Kernels has one row per kernel (matrix-vector kernels per product
	// shape), most time first (TimingLaunches only).
	Kernels []KernelTime
}

// KernelTime is the GPU time of one kind of launch in a plan's run.
type KernelTime struct {
	// Name is the kernel's name; matrix-vector products add their output
	// rows and inputs ("qmv4 8192x2048").
	Name     string
	Launches int           // launches per run
	Time     time.Duration // mean GPU time per run of all those launches
}

// planTimes accumulates the timed runs of a kept plan.
type planTimes struct {
	labels   []string
	barriers int
	sum      []float64 // nanoseconds per launch, summed over runs
	scratch  []float64
	span     float64
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
	var best *planTimes
	for _, p := range b.step.plans {
		if p.times != nil && (best == nil || p.times.runs > best.runs) {
			best = p.times
		}
	}
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
	pr.Runs, pr.Launches, pr.Barriers = best.runs, len(best.labels), best.barriers
	pr.GPU = time.Duration(best.span / n)
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
	case kernels.QMV4, kernels.QMV8, kernels.QMVX4, kernels.QMVX8:
		return fmt.Sprintf("%s %dx%d", id, words[h+1], words[h])
	case kernels.RMSNorm, kernels.NormX:
		return fmt.Sprintf("%s %dx%d", id, words[h+1], words[h])
	case kernels.Eltwise, kernels.EltX:
		return fmt.Sprintf("%s %d", id, words[h])
	}
	return id.String()
}

// newPlanTimes prepares the timing sums of a plan recorded from the
// current step's launches.
func (b *Backend) newPlanTimes() *planTimes {
	st := &b.step
	pt := &planTimes{labels: make([]string, len(st.recs)), sum: make([]float64, len(st.recs)), scratch: make([]float64, len(st.recs))}
	for i, r := range st.recs {
		pt.labels[i] = launchLabel(r.id, st.words[r.w0:r.w1])
		if st.sigs[i].barrier {
			pt.barriers++
		}
	}
	return pt
}

// addTimes reads the timestamps of the plan the step just ran, which has
// finished, into its sums.
func (b *Backend) addTimes(pe *planEntry, step time.Duration) error {
	timer, ok := b.drv.(LaunchTimer)
	if !ok || pe.times == nil {
		return nil
	}
	pt := pe.times
	span, ok, err := timer.Times(pe.plan, pt.scratch)
	if err != nil || !ok {
		return err
	}
	pt.span += span
	pt.step += step
	pt.runs++
	if b.timing == TimingLaunches {
		for i, v := range pt.scratch {
			pt.sum[i] += v
		}
	}
	return nil
}
