"""One headless Chromium for a whole test run, driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages ending in a NUL byte, read on fd 3, written on fd 4), so
no websocket library is needed and every page costs a new tab, not a new browser."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class BrowserError(AssertionError):
    """The browser failed, answered with an error, or did not answer in time."""


class Chromium:
    def __init__(self, binary: str, profile: Path, *, timeout: float = 60) -> None:
        self.timeout = timeout
        self.log = profile.parent / f"{profile.name}.log"
        self._log_file = self.log.open("wb")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        def onto_3_and_4() -> None:  # in the child: the browser reads fd 3 and writes fd 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
            for target, fd in zip((3, 4), high, strict=True):
                os.dup2(fd, target)  # inheritable

        # close_fds stays off so fds 3 and 4 survive (Python's own fds are not inheritable)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "--no-first-run",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log_file,
            close_fds=False, preexec_fn=onto_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        self._log_file.close()

    def _gone(self) -> BrowserError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.log.read_text(errors="replace")[-2000:]
        return BrowserError(f"Chromium exited (code {code}); its log ends:\n{tail}")

    # --- the protocol ---------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium did not answer within {self.timeout:g} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise self._gone()
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        out: dict[str, Any] = json.loads(msg)
        return out

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        mid = self._next_id
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params}
        if session is not None:
            msg["sessionId"] = session
        try:
            os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise self._gone() from None
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == mid:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for n, ev in enumerate(self._events):
                if ev["method"] == method and ev.get("sessionId") == session:
                    del self._events[n]
                    return ev
            reply = self._read_message(deadline)
            if "method" in reply:
                self._events.append(reply)

    # --- pages ----------------------------------------------------------------------------

    def open(self, url: str, *, width: int, height: int) -> Page:
        """A new tab of ``width`` x ``height`` CSS pixels with ``url`` loaded (its load event
        handled, then a frame painted)."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, target, session)
        self.send("Page.enable", session)
        self.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.send("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        # every load listener has run (a task after the event), then a frame was painted
        page.evaluate("new Promise(r => { const after = () => setTimeout(r, 0); "
                      "if (document.readyState === 'complete') after(); "
                      "else addEventListener('load', after); })"
                      ".then(() => new Promise(r => requestAnimationFrame(() => "
                      "requestAnimationFrame(r))))")
        return page


class Page:
    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session

    def evaluate(self, expression: str) -> Any:
        res = self.browser.send("Runtime.evaluate", self.session, expression=expression,
                                awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in res:
            raise BrowserError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def dom(self) -> str:
        """The DOM as Chromium built it (what ``--dump-dom`` prints)."""
        return str(self.evaluate("document.documentElement.outerHTML"))

    def screenshot(self, path: Path) -> Path:
        data = self.browser.send("Page.captureScreenshot", self.session, format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.send("Target.closeTarget", targetId=self.target)
