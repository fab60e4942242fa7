"""The play page in a real browser: Debian's chromium, driven by Playwright, plays whole
tic-tac-toe games against the agent by clicking the board, and the page shows the result
the rules give (checked against plain-Python tic-tac-toe, `ttt_reference`). Screenshots
of the finished game and of the analysis board go to `$AZJAX_ARTIFACTS` (`.ci/run` sets
it to `artifacts/`, which CI keeps), else to the test's temporary folder.

Without Playwright or a chromium the tests skip and say so, except where
`AZJAX_REQUIRE_BROWSER=1` (CI sets it): there they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import ttt_reference as ref
from test_serve import board_of, serving

CHROMIUM = os.environ.get("AZJAX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
RESULTS = ("You won.", "You lost.", "A draw.")


def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).is_file():
        return f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _browser_missing()
    if missing:
        if os.environ.get("AZJAX_REQUIRE_BROWSER") == "1":
            pytest.fail(f"AZJAX_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def server():
    with serving(seed=5) as srv:
        yield srv


@pytest.fixture
def artifacts(tmp_path) -> Path:
    """Where the screenshots go: `$AZJAX_ARTIFACTS`, else the test's temporary folder."""
    chosen = os.environ.get("AZJAX_ARTIFACTS")
    folder = Path(chosen) if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def moves_shown(page) -> list[str]:
    text = page.locator("#moves").inner_text().strip()
    return text.removeprefix("Moves:").split()


def show_the_analysis_board(page, side: str, artifacts: Path) -> None:
    """The analysis board of the agent's reply is on the page, with its table (it waits
    for it: a page that never shows it fails); its screenshot goes to `artifacts`."""
    board = page.locator("#analysis svg")
    board.wait_for(state="visible")
    assert board.count() == 1
    assert "search value" in page.locator("#analysis").inner_text()
    assert page.locator("#analysis-title").inner_text().startswith("The agent's search of ")
    board.screenshot(path=str(artifacts / f"analysis_board_{side}.png"))


@pytest.mark.parametrize("side", ["first", "second"])
def test_a_whole_game_is_played_by_clicking(browser, server, side, artifacts):
    page = browser.new_page(viewport={"width": 1100, "height": 700})
    page.set_default_timeout(60_000)
    try:
        page.goto(server.url)
        page.select_option("#side", side)
        page.click("#new")
        human = 0 if side == "first" else 1
        clicks = 0
        page.wait_for_function(
            f"() => document.getElementById('status').textContent.startsWith("
            f"'Your move (you play {side})')")
        while True:
            board = board_of(moves_shown(page))
            if ref.terminal(board):
                break
            assert ref.to_move(board) == human
            targets = page.locator("#board .target")
            legal = sorted(int(targets.nth(i).get_attribute("data-action"))
                           for i in range(targets.count()))
            assert legal == ref.legal_moves(board)
            move = legal[clicks % len(legal)]
            page.click(f"#board .target[data-action='{move}']")
            clicks += 1
            page.wait_for_function(
                "n => document.getElementById('moves').textContent.split(' ').length - 1 > n "
                "&& !document.getElementById('status').textContent.includes('thinking')",
                arg=sum(v != -1 for v in board))
            if clicks == 1:  # at most 3 plies: the game goes on, and the agent has replied
                show_the_analysis_board(page, side, artifacts)
        status = page.locator("#status").inner_text()
        winner = ref.winner(board)
        expected = "A draw." if winner is None else "You won." if winner == human else (
            "You lost.")
        assert status == expected and status in RESULTS
        assert page.locator("#status.over").count() == 1
        assert page.locator("#board .target").count() == 0  # nothing left to click
        page.screenshot(path=str(artifacts / f"browser_game_{side}.png"), full_page=True)
    finally:
        page.close()


def test_undo_and_a_refused_click_show_in_the_page(browser, server):
    page = browser.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(server.url)
        page.wait_for_selector("#board .target")
        page.click("#board .target[data-action='4']")
        page.wait_for_function("() => document.getElementById('moves').textContent"
                               ".split(' ').length === 3")
        assert moves_shown(page)[0] == "b2"
        page.click("#undo")
        page.wait_for_function("() => document.getElementById('moves').textContent === ''")
        assert page.locator("#board .target").count() == 9
        # A stale page: another tab moved; this one's click is refused with a message.
        page.evaluate("game.ply = 5")
        page.click("#board .target[data-action='0']")
        page.wait_for_function("() => document.getElementById('message').textContent")
        assert "out of date" in page.locator("#message").inner_text()
    finally:
        page.close()
