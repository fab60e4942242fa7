"""Tests write only into temporary folders: a pytest plugin that fails the session when
it left something new in the checkout.

The controller (the only process, or xdist's) asks git at the start and at the end what
the checkout holds beyond its tracked files, and lists its top folder (git does not see
an empty folder). What is new at the end counts: anything git ignores (`runs/`,
`build/`, `artifacts/`, ...), and anything at the top of the checkout (where a test's
relative path lands: the tests run from there). Not counted: an untracked file deeper
in (someone's new source file), the tools' caches (`__pycache__`, `.pytest_cache`,
`.hypothesis`), and what the session was told to write: the cost plugin's file
(`AZJAX_TEST_COSTS`) and the browser tests' screenshots (`AZJAX_ARTIFACTS`). The session
then ends with exit status 1, the paths listed in its summary. A checkout without git is
not checked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL_CACHES = ("__pycache__", ".pytest_cache", ".hypothesis")
OUTPUTS = ("AZJAX_TEST_COSTS", "AZJAX_ARTIFACTS")
"""The variables that name a file or folder the session is told to write."""


def entries(root: Path) -> set[str] | None:
    """What the checkout holds beyond its tracked files, as git lists it.

    Args:
      root: the checkout.

    Returns:
      `"?? path"` (untracked) and `"!! path"` (ignored) entries, a folder git does not
      descend into as one entry ending in `/`, and `"-- name"` for each entry of the top
      folder; None where git cannot tell.
    """
    try:
        done = subprocess.run(["git", "status", "--porcelain", "-z", "--ignored",
                               "--untracked-files=normal"], cwd=root, capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    listed = {entry for entry in done.stdout.split("\0") if entry[:3] in ("?? ", "!! ")}
    return listed | {f"-- {name}" for name in os.listdir(root)}


def strays(before: set[str], after: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    """The paths a session left in the checkout.

    Args:
      before, after: `entries` at the session's start and end.
      allowed: files and folders (relative to the checkout) the session may write.

    Returns:
      The new ignored paths and the new ones at the top, sorted.
    """
    found = set()
    for entry in after - before:
        kind, path = entry[:2], entry[3:]
        parts = path.rstrip("/").split("/")
        # an allowed path, a path in an allowed folder, or a folder that holds one
        if (any(part in TOOL_CACHES for part in parts)
                or any(f"{ok}/".startswith(f"{path.rstrip('/')}/")
                       or path.startswith(f"{ok}/") for ok in allowed)):
            continue
        if kind == "!!" or len(parts) == 1:
            found.add(path.rstrip("/"))
    return sorted(found)


class CheckoutGuard:
    """Compares the checkout at the session's end with its start."""

    def __init__(self, root: Path, before: set[str], allowed: tuple[str, ...]) -> None:
        self.root, self.before, self.allowed = root, before, allowed
        self.found: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        after = entries(self.root)
        if after is None:
            return
        self.found = strays(self.before, after, self.allowed)
        if self.found and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.found:
            terminalreporter.write_sep("=", "the tests wrote into the checkout", red=True)
            for path in self.found:
                terminalreporter.write_line(f"{self.root / path}")
            terminalreporter.write_line("tests write only into temporary folders "
                                        "(tmp_path); the session fails")


def register(config) -> None:
    """Registers the guard in the controller (from conftest's `pytest_configure`)."""
    if hasattr(config, "workerinput"):
        return
    before = entries(ROOT)
    if before is None:
        return
    given = [Path(os.environ[name]).resolve() for name in OUTPUTS if os.environ.get(name)]
    allowed = tuple(path.relative_to(ROOT).as_posix() for path in given
                    if path.is_relative_to(ROOT))
    config.pluginmanager.register(CheckoutGuard(ROOT, before, allowed), "azjax-checkout-guard")
