"""ctrstress's ``apply`` against a fake ``ctr`` script and real client processes: kill and
delete chase every container until the action takes effect, the container has finished, or the
deadline passes (real processes and real waiting, so it lives with the integration tests)."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from patchbench.scenarios import ctrstress

FAKE_CTR = """#!/bin/sh
# a fake ctr: "tasks kill -s KILL ID" / "containers delete ID" / "tasks delete --force ID"
# succeed when DIR/ID exists, hang when DIR/ID.hang exists, are refused otherwise; "tasks
# delete" also succeeds when DIR/ID.task exists (a task the container delete was refused for)
for last; do :; done
[ -e "{dir}/$last.hang" ] && exec sleep 30
[ -e "{dir}/$last" ] && exit 0
[ "$1 $2" = "tasks delete" ] && [ -e "{dir}/$last.task" ] && exit 0
echo "ctr: $last: not found" >&2
exit 1
"""


@dataclass
class ScriptDaemon:
    """A daemon whose ctr is FAKE_CTR, for ``apply``."""

    dir: Path

    def ctr_argv(self, *args: str) -> list[str]:
        return [str(self.dir / "ctr"), *args]

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def test_apply_chases_each_container_until_hit_or_finished(tmp_path: Path) -> None:
    ctr = tmp_path / "ctr"
    ctr.write_text(FAKE_CTR.format(dir=tmp_path))
    ctr.chmod(0o755)
    d = ScriptDaemon(tmp_path)
    (tmp_path / "there").touch()  # its task exists: hit at once
    (tmp_path / "stuck.hang").touch()  # the attempt never returns: a hang
    (tmp_path / "forced.task").touch()  # delete: refused, the task force-deleted: a hit
    clients = {cid: subprocess.Popen(argv) for cid, argv in
               (("there", ["sleep", "30"]), ("later", ["sleep", "30"]), ("gone", ["true"]),
                ("broke", ["false"]), ("stuck", ["sleep", "30"]), ("refused", ["sleep", "30"]),
                ("forced", ["sleep", "30"]))}
    wrapped = {cid: SimpleNamespace(proc=p) for cid, p in clients.items()}
    clients["gone"].wait()  # finished normally before the action: missed
    clients["broke"].wait()  # its start failed before the action: refused
    # "later" appears after a few attempts; "refused" never does and its client never exits
    later = subprocess.Popen(["sh", "-c", f"sleep 0.3; touch {tmp_path / 'later'}"])
    # the hang and the failure each wait out the deadline: 1.2 s, 4x the 0.3 s "later" needs
    try:
        how = ctrstress.apply(d, "kill", wrapped, timeout=1.2)  # type: ignore[arg-type]
        assert how == Counter(hit=2, missed=1, refused=1, hang=1, failed=2)
        how = ctrstress.apply(d, "delete", wrapped, timeout=1.2)  # type: ignore[arg-type]
        assert how == Counter(hit=3, missed=1, refused=1, hang=1, failed=1)
    finally:
        later.wait()
        for p in clients.values():
            p.kill()
            p.wait()
