"""GTP engines given time to start before their reply limit counts: for the tests whose
short limit (a second or a few) is meant for the commands a fake engine deliberately
leaves unanswered, not for the start of its Python interpreter on a busy machine."""

from __future__ import annotations

from azjax.go.gtp_client import GtpProcess

START_UP_S = 120
"""How long an engine may take to answer its first command."""


def wait_for_start_up(monkeypatch, seconds: float = START_UP_S) -> None:
    """Makes every GTP engine started from now on (for the test: `monkeypatch`) wait, up
    to `seconds`, until it has answered a `protocol_version`; only then does its own reply
    limit apply, to the commands of the code under test."""
    start = GtpProcess.__init__

    def start_and_wait(self, command, timeout=120.0, name="GTP engine"):
        start(self, command, seconds, name)
        self.send("protocol_version")  # the engine is up
        self.timeout = timeout

    monkeypatch.setattr(GtpProcess, "__init__", start_and_wait)
