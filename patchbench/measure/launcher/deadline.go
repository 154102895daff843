// Per-run deadlines with evidence.
//
// With -deadline DUR, every command the launcher starts runs in its own process group and has
// DUR to finish. A command still running at its deadline is a hang: BEFORE anything is killed,
// the launcher writes what the processes looked like into the -evidence directory (one JSON file
// per hang, see hangEvidence), then SIGKILLs the command's process group and every process that
// was found under the command (one that left the group, e.g. with setsid, included). The
// instance's exit code is then HangExitCode, and the launcher exits with HangExitCode when any
// instance hung (a hang wins over an ordinary failure), so that a caller counts it instead of
// treating it as fatal. The JSON record (-o) says per instance whether it hung.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// HangExitCode is the exit code of an instance that passed its deadline, and of the launcher
// when any instance did (the same code as coreutils' timeout).
const HangExitCode = 124

// procInfo is one process as /proc showed it at the deadline.
type procInfo struct {
	Pid     int    `json:"pid"`
	Ppid    int    `json:"ppid"`
	Pgid    int    `json:"pgid"`
	Comm    string `json:"comm"`
	State   string `json:"state"`   // the State line of /proc/PID/status, e.g. "S (sleeping)"
	SigCgt  string `json:"sig_cgt"` // hex masks from /proc/PID/status
	SigBlk  string `json:"sig_blk"`
	SigIgn  string `json:"sig_ign"`
	SigPnd  string `json:"sig_pnd"` // thread-pending
	ShdPnd  string `json:"shd_pnd"` // process-pending (shared)
	Wchan   string `json:"wchan"`   // the kernel function it sleeps in ("0" or "" when running)
	Cmdline string `json:"cmdline"`
	Threads int    `json:"threads"`
	// the wchan of every thread that sleeps somewhere, for multi-threaded (Go) programs
	ThreadWchans map[string]int `json:"thread_wchans,omitempty"`
	Zombie       bool           `json:"zombie"`
	Error        string         `json:"error,omitempty"` // the process vanished while being read
}

// hangEvidence is one hang: written as JSON into the evidence directory before the kill.
type hangEvidence struct {
	Schema   int        `json:"schema"`
	Instance int        `json:"instance"`
	Argv     []string   `json:"argv"`
	Pid      int        `json:"pid"`
	Deadline float64    `json:"deadline_s"`
	Elapsed  float64    `json:"elapsed_s"`
	Time     string     `json:"time"`
	Procs    []procInfo `json:"processes"`
	// "PARENT has zombie child PID (comm) while sleeping in WCHAN": the lost-SIGCHLD signature
	Findings []string `json:"findings"`
	Killed   []int    `json:"killed"`
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// statFields returns ppid and pgid from /proc/PID/stat (fields 4 and 5; comm may hold spaces).
func statFields(pid int) (ppid, pgid int, ok bool) {
	s := readFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	pgid, _ = strconv.Atoi(f[2])
	return ppid, pgid, true
}

func readProc(pid int) procInfo {
	p := procInfo{Pid: pid}
	status := readFile(fmt.Sprintf("/proc/%d/status", pid))
	if status == "" {
		p.Error = "gone before it could be read"
		return p
	}
	for _, line := range strings.Split(status, "\n") {
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			p.Comm = v
		case "State":
			p.State = v
		case "PPid":
			p.Ppid, _ = strconv.Atoi(v)
		case "SigCgt":
			p.SigCgt = v
		case "SigBlk":
			p.SigBlk = v
		case "SigIgn":
			p.SigIgn = v
		case "SigPnd":
			p.SigPnd = v
		case "ShdPnd":
			p.ShdPnd = v
		case "Threads":
			p.Threads, _ = strconv.Atoi(v)
		}
	}
	_, p.Pgid, _ = statFields(pid)
	p.Zombie = strings.HasPrefix(p.State, "Z")
	p.Wchan = strings.TrimSpace(readFile(fmt.Sprintf("/proc/%d/wchan", pid)))
	p.Cmdline = strings.TrimSpace(strings.ReplaceAll(readFile(fmt.Sprintf("/proc/%d/cmdline", pid)), "\x00", " "))
	if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err == nil && len(tasks) > 1 {
		p.ThreadWchans = map[string]int{}
		for _, t := range tasks {
			w := strings.TrimSpace(readFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, t.Name())))
			if w != "" && w != "0" {
				p.ThreadWchans[w]++
			}
		}
	}
	return p
}

// treeOf returns the pids of root, its descendants, and every member of process group pgid,
// sorted parents first.
func treeOf(root, pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	member := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, g, ok := statFields(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		if g == pgid && pgid > 0 {
			member[pid] = true
		}
	}
	seen := map[int]bool{}
	var out []int
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		out = append(out, pid)
		kids := children[pid]
		sort.Ints(kids)
		for _, c := range kids {
			walk(c)
		}
	}
	walk(root)
	var rest []int
	for pid := range member {
		if !seen[pid] {
			rest = append(rest, pid)
		}
	}
	sort.Ints(rest)
	for _, pid := range rest {
		walk(pid)
	}
	return out
}

// findings names the lost-SIGCHLD signature: a zombie child under a parent that sleeps.
func findings(procs []procInfo) []string {
	byPid := map[int]procInfo{}
	for _, p := range procs {
		byPid[p.Pid] = p
	}
	out := []string{}
	for _, p := range procs {
		if !p.Zombie {
			continue
		}
		parent, ok := byPid[p.Ppid]
		if !ok {
			continue
		}
		if strings.HasPrefix(parent.State, "S") || strings.HasPrefix(parent.State, "D") {
			out = append(out, fmt.Sprintf(
				"zombie child %d (%s) under sleeping parent %d (%s, %s, wchan %s): "+
					"the classic lost-SIGCHLD signature", p.Pid, p.Comm, parent.Pid, parent.Comm,
				parent.State, parent.Wchan))
		}
	}
	return out
}

// captureEvidence reads the tree of pid (and its group) and writes it into dir; it returns the
// pids seen, to be killed.
func captureEvidence(dir string, instance int, argv []string, pid int, deadline, elapsed time.Duration) []int {
	pids := treeOf(pid, pid)
	ev := hangEvidence{Schema: 1, Instance: instance, Argv: argv, Pid: pid,
		Deadline: deadline.Seconds(), Elapsed: elapsed.Seconds(),
		Time: time.Now().UTC().Format(time.RFC3339Nano)}
	for _, p := range pids {
		ev.Procs = append(ev.Procs, readProc(p))
	}
	ev.Findings = findings(ev.Procs)
	ev.Killed = pids
	if dir == "" {
		return pids
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "burst: cannot save hang evidence: %v\n", err)
		return pids
	}
	name := fmt.Sprintf("hang-%s-i%d-pid%d.json", time.Now().UTC().Format("20060102T150405.000000000Z"), instance, pid)
	data, _ := json.MarshalIndent(ev, "", "  ")
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintf(os.Stderr, "burst: cannot save hang evidence: %v\n", err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "burst: cannot save hang evidence: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "burst: instance %d (pid %d) passed its %s deadline; evidence in %s\n",
		instance, pid, deadline, filepath.Join(dir, name))
	return pids
}

// groups holds the process groups of the running commands, so that a launcher that is told to
// stop (SIGTERM, SIGINT, SIGHUP) takes them with it: they are not in its own group.
var groups = struct {
	sync.Mutex
	pgids map[int]bool
}{pgids: map[int]bool{}}

func track(pgid int, on bool) {
	groups.Lock()
	defer groups.Unlock()
	if on {
		groups.pgids[pgid] = true
	} else {
		delete(groups.pgids, pgid)
	}
}

// stopping is set once the launcher was told to stop: from then on, it exits by the signal's code
// only, never by what its killed commands returned.
var stopping atomic.Bool

// killGroups SIGKILLs every running command's process group (the launcher is stopping).
func killGroups() {
	groups.Lock()
	defer groups.Unlock()
	for pgid := range groups.pgids {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// runDeadline runs argv in its own process group with a deadline. It returns the duration, the
// exit code and whether it hung.
func runDeadline(argv []string, instance int, deadline time.Duration, evidence string) (float64, int, bool) {
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout = os.Stdout
	c.Stderr = os.Stderr
	// its own group; and killed if the launcher dies without cleaning up (SIGKILL)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := c.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "burst: %v\n", err)
		return time.Since(t0).Seconds(), -1, false
	}
	track(c.Process.Pid, true)
	defer track(c.Process.Pid, false)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case err := <-done:
		return time.Since(t0).Seconds(), exitCode(err), false
	case <-t.C:
	}
	elapsed := time.Since(t0)
	pid := c.Process.Pid
	pids := captureEvidence(evidence, instance, argv, pid, deadline, elapsed)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintf(os.Stderr, "burst: instance %d (pid %d) survived SIGKILL for 10 s\n", instance, pid)
	}
	return elapsed.Seconds(), HangExitCode, true
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode() // -1 when killed by a signal, as without a deadline
	}
	return -1
}

// becomeSubreaper makes orphaned descendants of the commands children of the launcher, so that a
// process that outlives its command (a daemon, a lost child) is seen and killed, not left behind.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "burst: cannot become a child subreaper: %v\n", errno)
	}
}

// reapOrphans kills and reaps the launcher's children that are not running commands (processes
// reparented to it); it returns the ones that were still alive, as "pid comm: cmdline". Only
// called when no command runs, so waiting for any child cannot take a command's exit status.
func reapOrphans() []string {
	self := os.Getpid()
	var escaped []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, _, ok := statFields(pid)
		if !ok || ppid != self {
			continue
		}
		p := readProc(pid)
		// caught in the middle of an exec, a process has its new name but not yet its arguments:
		// read it again for a moment, so that what escaped is named by its command line
		for t := 0; t < 50 && !p.Zombie && p.Error == "" && p.Cmdline == ""; t++ {
			time.Sleep(time.Millisecond)
			p = readProc(pid)
		}
		if !p.Zombie && p.Error == "" {
			escaped = append(escaped, fmt.Sprintf("%d %s: %s", pid, p.Comm, p.Cmdline))
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its group, when it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		for t := 0; t < 100; t++ {
			if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid || err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return escaped
}
