// SPDX-FileCopyrightText: Copyright The Lima Authors
// SPDX-License-Identifier: Apache-2.0

// Measurement harness for patchbench; not part of Lima.
//
// It drives the hostagent log writer (syncWriter over a real file, with
// logrus configured by initLogrus exactly as hostagentAction does) and only
// uses API that exists both before and after the coalesced-log-sync patch:
// the writer is built with the same composite literal as hostagentAction,
// and it is closed through io.Closer when (and only when) it has Close,
// which mirrors the deferred Close that the patched hostagentAction runs
// on return.
//
//	limactl __patchbench-logbench throughput -n N -dir D
//	limactl __patchbench-logbench stall -burst B -dir D [-writers W]
//	limactl __patchbench-logbench verify -burst B -dir D [-writers W]
//
// With -writers 1 the burst is logged by one goroutine; Go's sync.Mutex
// then hands logrus's lock to the waiting callback after about 1ms
// (starvation mode), so the callback never waits for the whole burst.
// -writers B (one goroutine per record, as when many tunnels are torn
// down at once) queues the callback behind the burst records.

package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/lima-vm/lima/v2/pkg/limatype/filenames"
)

const patchbenchLogbenchCmd = "__patchbench-logbench"

func init() {
	if len(os.Args) < 2 || os.Args[1] != patchbenchLogbenchCmd {
		return
	}
	os.Exit(patchbenchLogbench(os.Args[2:]))
}

func patchbenchLogbench(args []string) int {
	if len(args) < 1 {
		fmt.Fprintf(os.Stderr, "usage: limactl %s throughput|stall|verify [flags]\n", patchbenchLogbenchCmd)
		return 2
	}
	mode := args[0]
	fs := flag.NewFlagSet(patchbenchLogbenchCmd+" "+mode, flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the log file (required)")
	n := fs.Int("n", 2000, "throughput: number of records")
	burst := fs.Int("burst", 3214, "stall/verify: number of burst records")
	writers := fs.Int("writers", 1, "stall/verify: number of goroutines sharing the burst")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *dir == "" || *n < 1 || *burst < 1 || *writers < 1 {
		fmt.Fprintln(os.Stderr, "-dir is required; -n, -burst and -writers must be positive")
		return 2
	}

	// A fresh file per run, created like pkg/instance.Start does.
	path := filepath.Join(*dir, filenames.HostAgentStderrLog)
	if err := os.RemoveAll(path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.Remove(path)

	// Same construction and logrus setup as hostagentAction.
	stderr := &syncWriter{w: f}
	initLogrus(stderr)
	// The patched hostagentAction defers stderr.Close(); the unpatched
	// one has nothing to run at exit.
	closeLikeHostagent := func() {
		if c, ok := any(stderr).(io.Closer); ok {
			_ = c.Close()
		}
	}

	switch mode {
	case "throughput":
		for i := range *n {
			logrus.Debugf("closing GrpcClientRW for id: tcp-127.0.0.1:%d-%d", 40000+i%20000, i)
		}
		closeLikeHostagent()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case "stall":
		started := make(chan struct{})
		go logbenchBurst(*burst, *writers, started)
		<-started
		logbenchCallback()
		// Exit as soon as the callback's record is written, without
		// waiting for the rest of the burst. The file stays open for the
		// burst goroutines; it is unlinked by the deferred Remove.
		return 0
	case "verify":
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			logbenchBurst(*burst, *writers, started)
			close(done)
		}()
		<-started
		logbenchCallback()
		<-done
		closeLikeHostagent()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return logbenchVerify(path, *burst, *writers)
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
		return 2
	}
}

// logbenchBurst logs total records from the given number of goroutines,
// like gRPC port forwarder tunnels being torn down all at once. Record i of
// writer w carries "pb-w-i". The writers are released together once all of
// them are running; started is closed once every writer is about to log
// its first record and the first record has been written.
func logbenchBurst(total, writers int, started chan<- struct{}) {
	var once sync.Once
	var ready, inFlight, wg sync.WaitGroup
	gate := make(chan struct{})
	firstWritten := make(chan struct{})
	ready.Add(writers)
	inFlight.Add(writers)
	for w := range writers {
		count := total / writers
		if w < total%writers {
			count++
		}
		wg.Go(func() {
			ready.Done()
			<-gate
			inFlight.Done()
			for i := range count {
				logrus.Debugf("closing GrpcClientRW for id: pb-%d-%d", w, i)
				once.Do(func() { close(firstWritten) })
			}
		})
	}
	ready.Wait()
	close(gate)
	inFlight.Wait()
	<-firstWritten
	close(started)
	wg.Wait()
}

// logbenchCallback is the guest-event callback's record
// (pkg/hostagent.processGuestAgentEvents).
func logbenchCallback() {
	logrus.Debugf("guest agent event: %+v", "pb-callback")
}

var logbenchBurstRe = regexp.MustCompile(`^closing GrpcClientRW for id: pb-(\d+)-(\d+)$`)

func logbenchVerify(path string, total, writers int) int {
	type result struct {
		Records    int `json:"records"`
		Missing    int `json:"missing"`
		OutOfOrder int `json:"out_of_order"`
		Duplicates int `json:"duplicates"`
		Corrupt    int `json:"corrupt"`
	}
	var res result
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()

	seen := make(map[[2]int]int)
	last := make([]int, writers)
	for i := range last {
		last[i] = -1
	}
	callbacks := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Level != "debug" {
			res.Corrupt++
			continue
		}
		if rec.Msg == "guest agent event: pb-callback" {
			callbacks++
			continue
		}
		m := logbenchBurstRe.FindStringSubmatch(rec.Msg)
		if m == nil {
			res.Corrupt++
			continue
		}
		w, _ := strconv.Atoi(m[1])
		i, _ := strconv.Atoi(m[2])
		if w >= writers {
			res.Corrupt++
			continue
		}
		k := [2]int{w, i}
		seen[k]++
		if seen[k] > 1 {
			res.Duplicates++
			continue
		}
		if i < last[w] {
			res.OutOfOrder++
		}
		last[w] = i
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res.Records = len(seen)
	if callbacks > 0 {
		res.Records++
		res.Duplicates += callbacks - 1
	} else {
		res.Missing++
	}
	for w := range writers {
		count := total / writers
		if w < total%writers {
			count++
		}
		for i := range count {
			if seen[[2]int{w, i}] == 0 {
				res.Missing++
			}
		}
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Missing != 0 || res.OutOfOrder != 0 || res.Duplicates != 0 || res.Corrupt != 0 || res.Records != total+1 {
		return 1
	}
	return 0
}
