// slowstart is patchbench's bundled demo "upstream": a tiny service that boots a number of
// sandboxes at once. Like the container service in the seed report, it holds one service-wide
// lock across each sandbox's slow boot, so k sandboxes launched together start one at a time.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

type sandbox struct {
	id     int
	booted bool
}

type service struct {
	mu        sync.Mutex // guards sandboxes
	sandboxes map[int]*sandbox
	bootTime  time.Duration
}

func newService(boot time.Duration) *service {
	return &service{sandboxes: map[int]*sandbox{}, bootTime: boot}
}

// boot stands for the slow call into the VM.
func (s *service) boot(sb *sandbox) {
	time.Sleep(s.bootTime)
	sb.booted = true
}

func (s *service) start(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := &sandbox{id: id}
	s.sandboxes[id] = sb
	s.boot(sb)
}

func (s *service) count() (total, booted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sb := range s.sandboxes {
		total++
		if sb.booted {
			booted++
		}
	}
	return total, booted
}

func main() {
	n := flag.Int("n", 8, "sandboxes to start at once")
	boot := flag.Duration("boot", 15*time.Millisecond, "time one sandbox takes to boot")
	check := flag.Bool("check", false, "verify every sandbox booted exactly once and print a summary")
	flag.Parse()

	svc := newService(*boot)
	var wg sync.WaitGroup
	for i := 0; i < *n; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			svc.start(id)
		}(i)
	}
	wg.Wait()
	total, booted := svc.count()
	if *check {
		fmt.Printf("{\"started\": %d, \"booted\": %d}\n", total, booted)
	}
	if total != *n || booted != *n {
		fmt.Fprintf(os.Stderr, "slowstart: %d of %d sandboxes booted\n", booted, *n)
		os.Exit(1)
	}
}
