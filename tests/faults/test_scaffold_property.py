"""The property of the scaffolding commands: whatever name a user gives and whatever shape their
commits have, ``series new`` then ``comparison new`` either succeed, and then ``patch --check``
passes on what they wrote, or refuse with exit 10 (the name, the range) or 12 (a commit a patch
cannot hold: a mode change, a symbolic link, a binary file, nothing changed), never a traceback
or another code. Hypothesis draws the names (valid, too long, with '/', '..', upper case) and the
commits (subjects, bodies with ``---`` lines, quoted diffs, DEP-3 fields and mail headers, each
kind of change).

Bounded for CI: a dozen examples, derandomized (about 25 s); SCAFFOLD_EXAMPLES_SCALE=10 for more."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import support
from tests.faults.scaffold_support import TARGET, Scaffold, make, staged

pytestmark = pytest.mark.integration
SCALE = float(os.environ.get("SCAFFOLD_EXAMPLES_SCALE", "1"))

TRICKY = ["---", "--- a/main.go", "+++ b/main.go", "diff --git a/x b/x", "Index: y",
          "@@ -1 +1 @@", "-old", "+new", "Description: theirs", "Forwarded: yes",
          "Author: Someone <s@x>", "Origin: vendor", "From: Evil <e@x>", "Subject: another",
          "-- ", "GIT binary patch", "rename from a", "new file mode 120000", "`code`",
          "<b>bold</b>", "    indented", "", "#not a comment?", "Signed-off-by: A <a@x>"]
line = st.sampled_from(TRICKY) | st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\n"), max_size=30)
subject = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60)
body = st.lists(line, max_size=8).map("\n".join)
CHANGES = ("modify", "add", "delete", "rename", "mode", "binary", "empty", "symlink", "spaces")
commit = st.tuples(subject, body, st.sampled_from(CHANGES))
name = (st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True)
        | st.integers(60, 70).map(lambda n: "n" * n)
        | st.sampled_from(["../x", "a/b", "Upper", "-dash", ".hidden", "", "baseline", "greet"]))

_counter = itertools.count()


def _make_commits(sc: Scaffold, shapes: list[tuple[str, str, str]]) -> str:
    branch = f"b{next(_counter)}"
    support.git(sc.clone, "checkout", "-q", "-B", branch, "v1")
    for i, (subj, text, change) in enumerate(shapes):
        main = sc.clone / "main.go"
        extra = sc.clone / f"extra{i}.txt"
        if change == "modify":
            main.write_text(main.read_text().replace('"hello"', f'"hello {branch} {i}"'))
        elif change in ("add", "rename", "delete", "spaces"):
            extra.write_text(f"line {i}\n" + ("  trailing \t\n" if change == "spaces" else ""))
            if change in ("rename", "delete"):
                support.git(sc.clone, "add", "-A")
                support.git(sc.clone, "commit", "-q", "-m", f"setup {i}\n\nso that it can go.")
                if change == "rename":
                    support.git(sc.clone, "mv", extra.name, f"moved{i}.txt")
                else:
                    extra.unlink()
        elif change == "mode":
            main.chmod(main.stat().st_mode ^ 0o111)
        elif change == "binary":
            extra.write_bytes(bytes(range(256)))
        elif change == "symlink":
            (sc.clone / f"link{i}").symlink_to("main.go")
        support.git(sc.clone, "add", "-A")
        message = sc.clone.parent / "message"
        message.write_text(f"{subj}\n\n{text}\n")
        support.git(sc.clone, "commit", "-q", "--allow-empty", "--allow-empty-message",
                    "-F", str(message))
    return branch


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, upstream_template: support.Upstream,
           go_version: str) -> Scaffold:
    """One project for every example (a name drawn twice is refused: exit 10)."""
    tmp = tmp_path_factory.mktemp("scaffold-property")
    return make(tmp, support.copy_upstream(upstream_template, tmp / "upstream"), go_version)


@settings(max_examples=int(12 * SCALE), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(series=name, commits=st.lists(commit, min_size=1, max_size=2))
def test_the_scaffolding_commands_write_what_patch_check_accepts_or_refuse(
        shared: Scaffold, series: str, commits: list[tuple[str, str, str]]) -> None:
    sc = shared
    branch = _make_commits(sc, commits)
    before = sc.matrix.read_bytes()
    code, _, err = sc.run("series", "new", series, "--target", TARGET, "--from", str(sc.clone),
                          f"v1..{branch}")
    assert code in (0, 10, 12), err
    assert "Traceback" not in err
    if code != 0:
        assert sc.matrix.read_bytes() == before
        assert staged(sc.root) == []
        return
    code, _, err = sc.run("comparison", "new", series, "--target", TARGET, "--candidate", series)
    assert code in (0, 10), err
    if code != 0:  # a name the series may take but a comparison may not (e.g. taken already)
        assert "already exists" in err or "reserved" in err, err
        return
    code, out, err = sc.run("patch", "--check", "--series", series)
    assert code == 0, err + out
    n = int(support.git(sc.clone, "rev-list", "--count", f"v1..{branch}"))
    assert f"ok ({n} patch{'es' if n > 1 else ''})" in out
    texts = [p.read_text() for p in sorted((sc.root / "patches" / series).glob("*.patch"))]
    for t in texts:  # the DEP-3 fields in the message, where patch --check reads them
        message = t.split("\n\n", 1)[1].split("\n---\n", 1)[0]
        assert re.search(r"^Description: ", message, re.M), t
        assert re.search(r"^Forwarded: ", message, re.M), t
    assert staged(sc.root) == [] and Path(sc.root / "patches" / series / "series").is_file()
