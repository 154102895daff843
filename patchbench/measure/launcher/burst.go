// burst starts k copies of a command at one moment and waits for all of them.
//
//	burst -k K [-o FILE] [-deadline DUR [-evidence DIR] [-n N] [-escapes]] -- CMD [ARGS...] [--then CMD [ARGS...]]...
//
// Every argument's "{i}" is replaced by the instance index (0..k-1). All k instances are
// released together (goroutines blocked on one channel), so no instance waits for another to
// finish launching. With --then, an instance runs its commands one after the other (phases) and
// stops at the first that fails. Each instance's latency (release to the end of its last command),
// the duration of each phase and its exit code are appended to FILE as one JSON line. The exit
// code is 0 only if every instance exited 0.
//
// With -deadline DUR (e.g. 5s), every command runs in its own process group and gets DUR; one
// still running then is a hang: its evidence is saved into DIR before its group is killed, and
// the launcher exits with 124 (see deadline.go). With -n N the k instances are launched N times,
// one after the other ("{rep}" in an argument is the repetition, 0..N-1), one JSON line each. With
// -escapes the launcher is a child subreaper: a process that outlives its command is reparented
// to it, recorded as escaped, and killed (not for commands whose children are meant to live on,
// such as runc exec -d). Without -deadline nothing changes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type record struct {
	K         int         `json:"k"`
	Wall      float64     `json:"wall"`
	Latencies []float64   `json:"latencies"`
	ExitCodes []int       `json:"exit_codes"`
	Phases    [][]float64 `json:"phases"`
	Hung      []bool      `json:"hung,omitempty"` // with -deadline: which instances passed it
	Rep       int         `json:"rep"`            // the repetition (-n)
	// with -deadline: processes that outlived their command (reparented to the launcher, which
	// is a child subreaper), as "pid comm: cmdline"; they were killed
	Escaped []string `json:"escaped,omitempty"`
}

// split cuts the argument list at every "--then" into the phases' commands.
func split(args []string) [][]string {
	var out [][]string
	cur := []string{}
	for _, a := range args {
		if a == "--then" {
			out = append(out, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, a)
	}
	return append(out, cur)
}

func run(argv []string) (float64, int) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout = os.Stdout
	c.Stderr = os.Stderr
	t0 := time.Now()
	err := c.Run()
	d := time.Since(t0).Seconds()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return d, ee.ExitCode()
		}
		return d, -1
	}
	return d, 0
}

func main() {
	k := flag.Int("k", 1, "instances to launch at once")
	out := flag.String("o", "", "append one JSON line with per-instance latencies to this file")
	deadline := flag.Duration("deadline", 0, "each command's deadline (0: none); a command past it is a hang")
	reps := flag.Int("n", 1, "with -deadline: launch the k instances this many times, one after the other")
	escapes := flag.Bool("escapes", false, "with -deadline: be a child subreaper; record and kill processes that outlive their command")
	evidence := flag.String("evidence", "", "with -deadline: save each hang's evidence into this directory")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *k < 1 {
		fmt.Fprintln(os.Stderr, "usage: burst -k K [-o FILE] -- CMD [ARGS...]")
		os.Exit(2)
	}
	phases := split(args)
	for _, p := range phases {
		if len(p) == 0 {
			fmt.Fprintln(os.Stderr, "burst: empty command around --then")
			os.Exit(2)
		}
	}
	if *reps < 1 || (*reps > 1 && *deadline <= 0) {
		fmt.Fprintln(os.Stderr, "burst: -n needs -deadline, and at least 1")
		os.Exit(2)
	}
	if *deadline > 0 {
		// the commands are in process groups of their own: take them along when told to stop
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		go func() {
			sig := <-stop
			stopping.Store(true)
			killGroups()
			os.Exit(128 + int(sig.(syscall.Signal)))
		}()
		if *escapes {
			becomeSubreaper()
		}
	}
	failed, hung, lastCode := 0, 0, 0
	for rep := 0; rep < *reps; rep++ {
		rec := once(phases, *k, rep, *deadline, *evidence, *escapes)
		for i, code := range rec.ExitCodes {
			if code != 0 {
				failed++
				lastCode = code
			}
			if rec.Hung != nil && rec.Hung[i] {
				hung++
			}
		}
		if *out != "" {
			f, err := os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				line, _ := json.Marshal(rec)
				f.Write(append(line, '\n'))
				f.Close()
			}
		}
	}
	if hung > 0 {
		fmt.Fprintf(os.Stderr, "burst: %d of %d runs hung (passed the %s deadline)\n", hung, *k**reps, *deadline)
		os.Exit(HangExitCode)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "burst: %d of %d runs failed\n", failed, *k**reps)
		os.Exit(singleCode(*k**reps, lastCode))
	}
}

// once launches the k instances together (repetition rep) and waits for all of them.
func once(phases [][]string, k, rep int, deadline time.Duration, evidence string, escapes bool) record {
	rec := record{K: k, Rep: rep, Latencies: make([]float64, k), ExitCodes: make([]int, k),
		Phases: make([][]float64, k)}
	if deadline > 0 {
		rec.Hung = make([]bool, k)
	}
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(k)
	done.Add(k)
	for i := 0; i < k; i++ {
		go func(i int) {
			defer done.Done()
			ready.Done()
			<-release
			for _, p := range phases {
				argv := make([]string, len(p))
				for j, a := range p {
					a = strings.ReplaceAll(a, "{i}", strconv.Itoa(i))
					argv[j] = strings.ReplaceAll(a, "{rep}", strconv.Itoa(rep))
				}
				var d float64
				var code int
				if deadline > 0 {
					var hung bool
					d, code, hung = runDeadline(argv, i, deadline, evidence)
					rec.Hung[i] = hung
				} else {
					d, code = run(argv)
				}
				rec.Phases[i] = append(rec.Phases[i], d)
				rec.Latencies[i] += d
				if code != 0 {
					rec.ExitCodes[i] = code
					return
				}
			}
		}(i)
	}
	ready.Wait()
	start := time.Now()
	close(release)
	done.Wait()
	if stopping.Load() {
		select {} // the signal handler exits
	}
	rec.Wall = time.Since(start).Seconds()
	if deadline > 0 && escapes {
		rec.Escaped = reapOrphans()
	}
	return rec
}

// singleCode is the launcher's exit code when runs failed: for a single run (-k 1 without -n),
// the command's own code, so that a caller timing one command through the launcher sees it as if
// it had run the command itself. A command killed by a signal (its code is -1 here) and one that
// itself exits with the hang code give 1, so that the latter is never counted as a hang. For
// several runs, 1.
func singleCode(runs, code int) int {
	if runs != 1 || code == 0 || code == HangExitCode || code > 255 {
		return 1
	}
	if code < 0 {
		return 1 // killed by a signal the run could not name (see exitCode)
	}
	return code
}
