// burst starts k copies of a command at one moment and waits for all of them.
//
//	burst -k K [-o FILE] -- CMD [ARGS...]
//
// Every argument's "{i}" is replaced by the instance index (0..k-1). The children are created
// first, then released together by closing one pipe, so no instance waits for another to
// finish launching. Each instance's latency (release to exit) and exit code are appended to FILE
// as one JSON line. The exit code is 0 only if every instance exited 0.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

type record struct {
	K         int       `json:"k"`
	Wall      float64   `json:"wall"`
	Latencies []float64 `json:"latencies"`
	ExitCodes []int     `json:"exit_codes"`
}

func main() {
	k := flag.Int("k", 1, "instances to launch at once")
	out := flag.String("o", "", "append one JSON line with per-instance latencies to this file")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *k < 1 {
		fmt.Fprintln(os.Stderr, "usage: burst -k K [-o FILE] -- CMD [ARGS...]")
		os.Exit(2)
	}
	cmds := make([]*exec.Cmd, *k)
	for i := range cmds {
		argv := make([]string, len(args))
		for j, a := range args {
			argv[j] = strings.ReplaceAll(a, "{i}", strconv.Itoa(i))
		}
		cmds[i] = exec.Command(argv[0], argv[1:]...)
		cmds[i].Stdout = os.Stdout
		cmds[i].Stderr = os.Stderr
	}
	rec := record{K: *k, Latencies: make([]float64, *k), ExitCodes: make([]int, *k)}
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(*k)
	done.Add(*k)
	start := time.Now()
	for i, c := range cmds {
		go func(i int, c *exec.Cmd) {
			defer done.Done()
			ready.Done()
			<-release
			t0 := time.Now()
			err := c.Run()
			rec.Latencies[i] = time.Since(t0).Seconds()
			if err != nil {
				rec.ExitCodes[i] = -1
				if ee, ok := err.(*exec.ExitError); ok {
					rec.ExitCodes[i] = ee.ExitCode()
				}
			}
		}(i, c)
	}
	ready.Wait()
	start = time.Now()
	close(release)
	done.Wait()
	rec.Wall = time.Since(start).Seconds()
	failed := 0
	for _, code := range rec.ExitCodes {
		if code != 0 {
			failed++
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
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "burst: %d of %d instances failed\n", failed, *k)
		os.Exit(1)
	}
}
