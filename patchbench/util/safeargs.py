"""No value reaches an external command as an option. Every value from the command line, the
environment or matrix.yaml that ends up in an argv is checked here first (URLs: https, ssh, git
and file transports and plain paths only, never ``<transport>::`` helpers; refs by git's rules;
names, paths and images), never starts with ``-``, and is placed after ``--`` where the tool
supports it. ``GIT_TRANSPORTS`` makes git itself refuse any other transport. docs/safety.md,
class 1."""

from __future__ import annotations

import re

ALLOWED_SCHEMES = ("https", "ssh", "git", "file")
GIT_TRANSPORTS = [
    "-c", "protocol.allow=never",
    *[arg for scheme in ALLOWED_SCHEMES for arg in ("-c", f"protocol.{scheme}.allow=always")],
]
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_IMAGE = re.compile(r"^[a-z0-9][a-zA-Z0-9._/:-]*@sha256:[0-9a-f]{64}$")


class UnsafeValue(ValueError):
    """A value that could be read as an option or run something; the message says why."""


def _common(value: str, what: str) -> None:
    if not value:
        raise UnsafeValue(f"{what} is empty")
    if value.startswith("-"):
        raise UnsafeValue(f"{what} {value!r} starts with '-', so a command would read it as an "
                          "option; refused")
    if _CONTROL.search(value):
        raise UnsafeValue(f"{what} {value!r} contains control characters; refused")


def check_url(url: str, what: str = "source") -> str:
    """A git URL or path that git can only read as a repository, over an allowed transport."""
    _common(url, what)
    first_slash = url.find("/")
    head = url if first_slash < 0 else url[:first_slash]
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme.lower() not in ALLOWED_SCHEMES:
            raise UnsafeValue(
                f"{what} {url!r} uses the transport {scheme!r}; only "
                f"{', '.join(ALLOWED_SCHEMES)} and plain paths are allowed")
        authority = rest.split("/", 1)[0]
        host = authority.rsplit("@", 1)[-1]
        user = authority.rsplit("@", 1)[0] if "@" in authority else ""
        if host.startswith("-") or user.startswith("-"):
            raise UnsafeValue(f"{what} {url!r}: a host or user starting with '-' would reach "
                              "ssh as an option; refused")
        if scheme.lower() != "file" and not host:
            raise UnsafeValue(f"{what} {url!r} names no host")
        if " " in authority:
            raise UnsafeValue(f"{what} {url!r}: spaces in the host; refused")
        return url
    if "::" in head:
        raise UnsafeValue(f"{what} {url!r} uses git's <transport>::<address> form, which can "
                          "run commands; refused")
    if ":" in head:  # scp-like: [user@]host:path, which git reads as ssh
        host = head.split(":", 1)[0]
        login = host.rsplit("@", 1)[-1]
        if login.startswith("-") or host.startswith("-") or not login or " " in host:
            raise UnsafeValue(f"{what} {url!r}: not a plain path nor a valid user@host:path")
        return url
    return url  # a plain path


def check_ref(ref: str, what: str = "ref") -> str:
    """A ref name git cannot read as an option or a revision expression (check-ref-format)."""
    _common(ref, what)
    bad = (
        ".." in ref or "@{" in ref or ref == "@" or ref.endswith((".", "/", ".lock"))
        or ref.startswith("/") or "//" in ref
        or any(c in ref for c in " ~^:?*[\\")
        or any(part.startswith(".") for part in ref.split("/"))
    )
    if bad:
        raise UnsafeValue(f"{what} {ref!r} is not a valid git ref name")
    return ref


def check_path(path: str, what: str = "path") -> str:
    """A file system path given to a command as an argument."""
    _common(path, what)
    return path


def check_image(image: str, what: str = "image") -> str:
    """A container image pinned by digest."""
    _common(image, what)
    if not _IMAGE.match(image):
        raise UnsafeValue(f"{what} {image!r} is not name@sha256:<64 hex digits>")
    return image
