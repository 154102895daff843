"""A fixture upstream with a real pull request's shape, for the README's short path: a tiny OCI
CLI in Go, built with `make runc` as the runc template builds runc (``spec``, ``run -b BUNDLE
ID``, ``list -q``, ``delete``, ``kill``, ``--version``), whose ``run`` reads the bundle's
config.json and prepares the process's environment before "starting" it.

- On main, that preparation drops duplicate variables by searching what it kept so far for every
  variable: quadratic in the number of variables (as runc's did before its pull request #4325,
  one ``os.Setenv`` per variable).
- Pull request #7 (branch ``env-dedup``) brings two commits: the first adds ``dedupEnv`` (a
  map, linear), the second uses it in ``run`` and removes the old loop. The second does not
  build without the first (``undefined: dedupEnv``).
- main moves on (one more commit), then ``Merge pull request #7 from fixture/env-dedup`` merges
  it; the commit before the merge is main~1.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import git

GO_MOD = "module example.invalid/envrunc\n\ngo 1.21\n"
MAKEFILE = "runc:\n\tgo build -o runc .\n\n.PHONY: runc\n"

MAIN_GO = '''package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// prepare is what run does with the process's environment before starting it
var prepare = prepareEnv

func spec() error {
	cfg := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal": true,
			"args":     []string{"sh"},
			"env":      []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"},
			"cwd":      "/",
		},
		"root":     map[string]any{"path": "rootfs", "readonly": true},
		"hostname": "envrunc",
		"mounts":   []any{},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile("config.json", data, 0o644)
}

func run(bundle string) error {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return err
	}
	var cfg struct {
		Process struct {
			Args []string `json:"args"`
			Env  []string `json:"env"`
		} `json:"process"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	env, err := prepare(cfg.Process.Env)
	if err != nil {
		return err
	}
	if len(cfg.Process.Args) == 0 || len(env) == 0 {
		return fmt.Errorf("nothing to run")
	}
	return nil
}

func main() {
	args := os.Args[1:]
	for len(args) > 1 && (args[0] == "--root" || args[0] == "--log") {
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: runc COMMAND")
		os.Exit(2)
	}
	var err error
	switch args[0] {
	case "--version", "-v":
		fmt.Println("runc version 1.0.0-envrunc\\ncommit: fixture")
	case "spec":
		err = spec()
	case "run":
		bundle := "."
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "-b" || args[i] == "--bundle" {
				bundle = args[i+1]
			}
		}
		err = run(bundle)
	case "list", "delete", "kill", "state":
	default:
		err = fmt.Errorf("unknown command %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "runc:", err)
		os.Exit(1)
	}
}

var _ = strings.IndexByte
'''

QUADRATIC = '''
// prepareEnv keeps the last value of every variable, searching what it kept so far for each
func prepareEnv(env []string) ([]string, error) {
	out := []string{}
	for _, kv := range env {
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return nil, fmt.Errorf("invalid environment variable %q", kv)
		}
		key := kv[:i+1]
		found := false
		for j := range out {
			if strings.HasPrefix(out[j], key) {
				out[j] = kv
				found = true
			}
		}
		if !found {
			out = append(out, kv)
		}
	}
	return out, nil
}
'''

DEDUP_GO = '''package main

import (
	"fmt"
	"strings"
)

// dedupEnv keeps the last value of every variable, in the order they first came: one pass and
// a map, whatever the number of variables
func dedupEnv(env []string) ([]string, error) {
	at := make(map[string]int, len(env))
	out := make([]string, 0, len(env))
	for _, kv := range env {
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return nil, fmt.Errorf("invalid environment variable %q", kv)
		}
		if j, ok := at[kv[:i]]; ok {
			out[j] = kv
			continue
		}
		at[kv[:i]] = len(out)
		out = append(out, kv)
	}
	return out, nil
}
'''

PR = 7


def make(tmp: Path) -> Path:
    """The fixture upstream (a git repository with main and the merged pull request #7)."""
    up = tmp / "envrunc"
    up.mkdir()
    git(up, "init", "-q", "-b", "main")
    (up / "go.mod").write_text(GO_MOD)
    (up / "Makefile").write_text(MAKEFILE)
    (up / "main.go").write_text(MAIN_GO + QUADRATIC)
    (up / "README.md").write_text("envrunc: a tiny OCI CLI\n")
    git(up, "add", "-A")
    git(up, "commit", "-q", "-m", "envrunc: spec, run, list, delete")
    git(up, "tag", "v1.0.0")
    git(up, "checkout", "-q", "-b", "env-dedup")
    (up / "dedup.go").write_text(DEDUP_GO)
    git(up, "add", "-A")
    git(up, "commit", "-q", "-m", "env: add dedupEnv, one pass with a map")
    (up / "main.go").write_text(MAIN_GO.replace("var prepare = prepareEnv",
                                                "var prepare = dedupEnv"))
    git(up, "commit", "-q", "-am", "run: prepare the environment with dedupEnv\n\n"
        "The search of what was kept for every variable made a start quadratic in them.")
    git(up, "checkout", "-q", "main")
    (up / "README.md").write_text("envrunc: a tiny OCI CLI (spec, run, list, delete)\n")
    git(up, "commit", "-q", "-am", "README: the commands")
    git(up, "merge", "-q", "--no-ff", "-m",
        f"Merge pull request #{PR} from fixture/env-dedup\n\nenv: one pass with a map",
        "env-dedup")
    git(up, "branch", "-q", "-D", "env-dedup")  # merged: the branch is gone, as on a forge
    return up
