"""`python -m azjax.serve`: the games the page plays (`GameTable`: moves checked, the
agent's replies, undo, hints, stale pages), the HTTP server under 1,000 malformed
requests, and the command line. Games are checked against plain-Python tic-tac-toe
(`ttt_reference`)."""

from __future__ import annotations

import contextlib
import errno
import functools
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import numpy as np
import pytest
import ttt_reference as ref
from child_io import finish, read_line
from cli_in_process import command
from test_games_training import TINY

from azjax import Agent
from azjax.commands.serve import MAX_BODY, OwnAddress, Server
from azjax.commands.serve import main as serve_main
from azjax.core.networks import NetworkConfig, init_params
from azjax.run.browser.web_games import GameError, GameTable
from envs.picture import Picture

ROOT = Path(__file__).resolve().parents[1]
CONFIG = TINY.replace(network=NetworkConfig(channels=8, policy_filters=2, value_hidden=8))


@functools.cache
def agent(game: str = "tictactoe", **options) -> Agent:
    """An agent with a freshly initialised network: the page needs moves, not good ones."""
    config = CONFIG.replace(game=game, game_options=options)
    env = config.make_env()
    return Agent(env, config.program, init_params(env, config.program.network,
                                                  jax.random.key(0)))


def board_of(moves: list[str]) -> tuple[int, ...]:
    """The plain-Python board after moves in tic-tac-toe notation ("a1".."c3")."""
    board = (-1,) * 9
    for move in moves:
        col, row = "abc".index(move[0]), 3 - int(move[1])
        board = ref.play(board, row * 3 + col)
    return board


def check_view(view: dict, human: int) -> tuple[int, ...]:
    """What a described game claims, against the plain-Python replay of its moves."""
    board = board_of(view["moves"])
    assert view["ply"] == len(view["moves"])
    assert view["over"] == ref.terminal(board)
    assert view["your_turn"] == (not ref.terminal(board) and ref.to_move(board) == human)
    svg = ET.fromstring(view["board"])
    targets = sorted(int(e.get("data-action")) for e in svg.iter()
                     if e.get("class") == "target")
    assert targets == (ref.legal_moves(board) if view["your_turn"] else [])
    if view["over"]:
        won = ref.winner(board)
        expected = "A draw." if won is None else "You won." if won == human else "You lost."
        assert view["result"] == expected
    else:
        assert view["result"] is None
    return board


def test_a_game_against_the_agent_is_played_by_the_rules_and_undone():
    table = GameTable(agent(), seed=0)
    view = table.new({"side": "second"})
    assert view["human"] == 1 and view["moves"] and view["analysis"]  # the agent moved
    ET.fromstring(view["analysis"])
    rng = random.Random(0)
    history = []
    while not view["over"]:
        board = check_view(view, 1)
        history.append(view["moves"])
        move = rng.choice(ref.legal_moves(board))
        view = table.move({"id": view["id"], "ply": view["ply"], "action": move})
        assert view["moves"][len(history[-1])] == "abc"[move % 3] + str(3 - move // 3)
    check_view(view, 1)
    # Undo goes back to the human's last turn, and again to the one before.
    for expected in reversed(history[-2:]):
        view = table.undo({"id": view["id"], "ply": view["ply"]})
        assert view["moves"] == expected and view["your_turn"] and not view["over"]
        check_view(view, 1)


def test_the_table_refuses_what_a_page_must_not_do():
    table = GameTable(agent(), seed=1)
    view = table.new({"side": "first"})
    game = {"id": view["id"], "ply": 0}
    refused = [
        ({"id": "nope", "ply": 0, "action": 0}, "unknown game"),
        ({**game, "ply": 3, "action": 0}, "out of date"),
        ({**game, "ply": "0", "action": 0}, "'ply' must be an integer"),
        ({**game, "action": 9}, "'action' must be 0-8"),
        ({**game, "action": True}, "'action' must be an integer"),
        ({**game, "action": 1.5}, "'action' must be an integer"),
        ({**game, "move": "z9"}, "unreadable move"),
        ({**game, "move": 4}, "'move' must be text"),
    ]
    for request, message in refused:
        with pytest.raises(GameError, match=message):
            table.move(request)
    with pytest.raises(GameError, match="nothing to undo"):
        table.undo(game)
    with pytest.raises(GameError, match="'side' must be one of"):
        table.new({"side": "middle"})
    view = table.move({**game, "move": "b2"})  # the notation works too
    assert view["moves"][0] == "b2" and view["ply"] == 2
    occupied = {**game, "ply": 2}
    with pytest.raises(GameError, match="not a legal move"):
        table.move({**occupied, "action": 4})
    hinted = table.hint(occupied)
    assert hinted["analysis_of"].startswith("your position") and hinted["ply"] == 2


def test_the_table_keeps_at_most_its_number_of_games():
    table = GameTable(agent(), seed=2, max_games=3)
    ids = [table.new({})["id"] for _ in range(3)]
    table.show({"id": ids[0]})  # used: the oldest is now ids[1]
    table.new({})
    table.show({"id": ids[0]})
    with pytest.raises(GameError, match="unknown game"):
        table.show({"id": ids[1]})


def test_the_page_lists_moves_without_a_spot_as_buttons():
    """Coin splitting's and Go's moves all have spots; a game whose picture has none
    (here: a picture stripped of its spots) gets a button per legal move."""
    ttt = agent()
    table = GameTable(ttt, seed=3)
    try:
        ttt.env.picture = lambda state, last_move=None: Picture(100, 100)
        view = table.new({})
    finally:
        del ttt.env.picture
    assert sorted(b["action"] for b in view["buttons"]) == list(range(9))
    assert [b["text"] for b in view["buttons"]][:3] == ["a3", "b3", "c3"]


@contextlib.contextmanager
def serving(seed: int):
    """A server of a tic-tac-toe `GameTable` on a free port, in a thread of this process."""
    srv = Server(GameTable(agent(), seed=seed), port=0, quiet=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def server():
    with serving(seed=4) as srv:
        yield srv


def request(srv: Server, method: str, path: str, body: bytes | str | None = None,
            headers: dict | None = None) -> tuple[int, dict | str]:
    """One request with these headers (a Host among them replaces the real one)."""
    host, port = srv.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=20)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        text = response.read().decode()
        is_json = response.getheader("Content-Type") == "application/json"
        return response.status, json.loads(text) if is_json else text
    finally:
        connection.close()


def post(srv: Server, path: str, body: bytes | str, headers: dict | None = None
         ) -> tuple[int, dict]:
    return request(srv, "POST", path, body, headers)


def raw(srv: Server, data: bytes) -> bytes:
    """Sends bytes that need not be HTTP; returns whatever comes back before the close."""
    with socket.create_connection(srv.server_address[:2], timeout=20) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def malformed_requests(game_id: str, rng: np.random.Generator):
    """1,000 requests the server must refuse, of many kinds, each once or more."""
    json_bodies = [
        "", "{", "[1, 2]", "null", '"text"', "1e999", "[" * 5000 + "]" * 5000,
        '{"side": 7}', '{"side": {"a": 1}}', '{"id": 5, "ply": 0, "action": 0}',
        json.dumps({"id": game_id, "ply": -1, "action": 0}),
        json.dumps({"id": game_id, "ply": 0, "action": 10**30}),
        json.dumps({"id": game_id, "ply": 0, "action": -1}),
        json.dumps({"id": game_id, "ply": 0, "move": "\u2603" * 100}),
        json.dumps({"id": game_id, "ply": 0}),
        json.dumps({"id": game_id * 1000, "ply": 0, "action": 0}),
    ]
    kinds = ["json", "bytes", "path", "length", "raw"]
    for i in range(1000):
        kind = kinds[i % len(kinds)]
        path = ["/api/move", "/api/new", "/api/undo", "/api/hint", "/api/game"][i % 5]
        if kind == "json":
            yield "post", path, json_bodies[i // 5 % len(json_bodies)], {}
        elif kind == "bytes":
            yield "post", path, rng.bytes(int(rng.integers(1, 300))), {}
        elif kind == "path":
            yield "post", f"/api/{'x' * int(rng.integers(0, 50))}", "{}", {}
        elif kind == "length":
            yield "post", path, "{}", {"Content-Length": str(MAX_BODY + 1 + i)}
        else:
            yield "raw", "", rng.bytes(int(rng.integers(1, 200))) + b"\r\n\r\n", {}


def test_the_server_survives_1000_malformed_requests_and_still_plays(server):
    status, view = post(server, "/api/new", '{"side": "first"}')
    assert status == 200
    rng = np.random.default_rng(0)
    statuses = []
    for how, path, body, headers in malformed_requests(view["id"], rng):
        if how == "raw":
            raw(server, body)
            continue
        if "Content-Length" in headers:  # a declared size over the limit, nothing sent
            status, reply = post(server, path, b"", headers)
        else:
            status, reply = post(server, path, body)
        assert 400 <= status < 500 and reply["error"], (path, body, reply)
        statuses.append(status)
    assert len(statuses) == 800 and set(statuses) <= {400, 404, 409}
    # The game the malformed requests named is as it was, and plays to its end.
    status, same = post(server, "/api/game", json.dumps({"id": view["id"]}))
    assert status == 200 and same["moves"] == [] and same["your_turn"]
    rng = random.Random(1)
    while not view["over"]:
        board = check_view(view, 0)
        status, view = post(server, "/api/move", json.dumps(
            {"id": view["id"], "ply": view["ply"], "action": rng.choice(ref.legal_moves(board))}))
        assert status == 200
    check_view(view, 0)


def test_only_the_servers_own_page_may_use_it(server, monkeypatch):
    """Another site's page reaches the server through a name of its own (DNS rebinding:
    its Host) or by a cross-site request (its Origin): refused, and no game is made."""
    port = server.server_address[1]
    made = []
    monkeypatch.setattr(server.table, "new", lambda request: made.append(request) or {})
    own = f"127.0.0.1:{port}"
    for host, origin in [(f"evil.example:{port}", None),
                         (f"evil.example:{port}", f"http://evil.example:{port}"),
                         ("127.0.0.1", None), (f"127.0.0.1:{port + 1}", None),
                         (f"127.0.0.1:{port}@evil.example", None),
                         (own, "http://evil.example"), (own, f"https://{own}"),
                         (own, f"http://localhost:{port}"), (own, "null")]:
        for method, path in [("POST", "/api/new"), ("GET", "/")]:
            headers = {"Host": host, **({"Origin": origin} if origin else {})}
            status, reply = request(server, method, path, "{}", headers)
            assert status == 403, (host, origin, method)
            assert reply["error"].count("\n") == 0
            assert ("Origin" if host == own else "Host") in reply["error"], reply
    assert made == []
    # The page's own requests: same host and port, any loopback name, Origin or none.
    for host in (own, f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        for origin in (None, f"http://{host}"):
            headers = {"Host": host, **({"Origin": origin} if origin else {})}
            assert request(server, "POST", "/api/new", "{}", headers)[0] == 200
            assert request(server, "GET", "/", headers=headers)[0] == 200
    assert len(made) == 8


def test_the_own_address_of_each_kind_of_listening_address():
    loopback = OwnAddress.of("127.0.0.1", 8765)
    assert loopback.refusal("localhost:8765", "http://localhost:8765") is None
    assert "Host" in loopback.refusal("192.168.1.5:8765", None)
    assert "Host" in loopback.refusal(None, None)
    named = OwnAddress.of("Box.example", 80)  # port 80: browsers leave it out
    assert named.refusal("box.example", "http://box.example") is None
    assert named.refusal("box.example:80", "http://box.example") is None
    assert "Host" in named.refusal("localhost", None)
    everywhere = OwnAddress.of("0.0.0.0", 8765)  # no other site can make these its own
    for host in ("192.168.1.5:8765", "[fe80::1]:8765", "localhost:8765", "0.0.0.0:8765"):
        assert everywhere.refusal(host, f"http://{host}") is None, host
    assert "Host" in everywhere.refusal("evil.example:8765", None)
    assert "Origin" in everywhere.refusal("192.168.1.5:8765", "http://evil.example:8765")


@pytest.mark.parametrize("length", ["\u00b2", "-5", "abc", "1e3", " ", "0x10", "9" * 5000])
def test_a_bad_content_length_is_refused(server, length):
    status, reply = post(server, "/api/new", b"", {"Content-Length": length})
    message = "at most" if length.isdecimal() and length.isascii() else "must be a number"
    assert status == 400 and message in reply["error"], reply


# Paths that would reach a file outside the page if the server looked files up.
OUTSIDE = ["/../../etc/passwd", "/..%2f..%2fetc%2fpasswd", "/%2e%2e/%2e%2e/etc/passwd",
           "//etc/passwd", "/etc/passwd", "/index.html/../../etc/passwd",
           "/static/../../../../etc/passwd"]


def test_the_page_is_served_and_unknown_pages_are_404(server):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=20)
    connection.request("GET", "/")
    response = connection.getresponse()
    page = response.read().decode()
    assert response.status == 200 and "Play tictactoe against the agent" in page
    # No file is served: a path to one is refused, and what comes back holds none of it.
    secret = Path("/etc/passwd").read_text().splitlines()[0]  # root's line: on every Linux
    assert secret.startswith("root:")
    for path in OUTSIDE:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read().decode()
        assert response.status == 404, (path, response.status, body)
        reply = json.loads(body)  # the error alone (the server writes "//" as "/")
        assert list(reply) == ["error"] and reply["error"].startswith("no page at /"), reply
        assert secret not in body and "root:" not in body
    connection.close()


# Ctrl-C as a terminal gives it: the child starts with SIGINT unblocked and raising
# KeyboardInterrupt, whatever the test process passes down (a disposition of SIG_IGN or
# a blocked signal survives exec, and a shell's background job ignores SIGINT).
AS_AT_A_TERMINAL = ("import runpy, signal; "
                    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                    "signal.signal(signal.SIGINT, signal.default_int_handler); "
                    "runpy.run_module('azjax.serve', run_name='__main__', alter_sys=True)")


def serve(*args: str) -> subprocess.Popen:
    """`python -m azjax.serve ARGS` (as from a terminal), its output piped."""
    return subprocess.Popen([sys.executable, "-c", AS_AT_A_TERMINAL, *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_line(process: subprocess.Popen, timeout: float = 120) -> str:
    """The child's first line of stdout, waiting at most `timeout` seconds for it."""
    return read_line(process, timeout)


def test_command_line_errors_are_one_line(tmp_path, monkeypatch):
    """`main` in this process (output captured); a server that starts fails the test."""
    agent().export(tmp_path / "ttt.azjax")

    def no_serving(self, *args, **kwargs):
        raise AssertionError("the server started serving")

    monkeypatch.setattr(Server, "serve_forever", no_serving)
    cases = [
        (["--run-dir", str(tmp_path / "missing")], "missing"),
        (["--agent", str(tmp_path / "ttt.azjax"), "--port", "70000"], "--port must be"),
        (["--run-dir", str(tmp_path / "ttt.azjax"), "--port", "70000"], "--port must be"),
    ]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        cases.append((["--agent", str(tmp_path / "ttt.azjax"), "--port", port],
                      "Address already in use"))
        for args, message in cases:
            done = command(serve_main, args)
            assert done.returncode == 2, done.stderr
            err = done.stderr
            assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def has_ipv6_loopback() -> bool:
    """Whether this machine can listen on ::1."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def assert_ipv6_refused_in_one_line(tmp_path: Path) -> None:
    """`--host ::1` on a machine without IPv6 there: exit status 2 and one line saying so."""
    agent().export(tmp_path / "ttt.azjax")
    done = command(serve_main, ["--agent", str(tmp_path / "ttt.azjax"), "--host", "::1",
                                "--port", "0"])
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "error: cannot listen on ::1: this machine has no IPv6 there"), done.stderr


def test_the_server_serves_on_ipv6_loopback(tmp_path):
    """`--host ::1`: the page and the API over IPv6, at the URL the server names (the
    address in brackets); where this machine has no IPv6 loopback, one line refusing it."""
    if not has_ipv6_loopback():
        assert_ipv6_refused_in_one_line(tmp_path)
        return
    srv = Server(GameTable(agent(), seed=5), host="::1", port=0, quiet=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        port = srv.server_address[1]
        assert srv.url == f"http://[::1]:{port}/"
        url = urllib.parse.urlsplit(srv.url)  # a port after an unbracketed ::1 is lost
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
        connection.request("GET", url.path)
        response = connection.getresponse()
        assert response.status == 200
        assert "Play tictactoe against the agent" in response.read().decode()
        connection.close()
        status, view = post(srv, "/api/new", '{"side": "second"}')
        assert status == 200 and len(view["moves"]) == 1
    finally:
        srv.shutdown()
        srv.server_close()


def test_ipv6_where_the_machine_has_none_is_one_line(tmp_path, monkeypatch):
    real = socket.socket

    def without_ipv6(family=socket.AF_INET, *args, **kwargs):
        if family == socket.AF_INET6:
            raise OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))
        return real(family, *args, **kwargs)

    monkeypatch.setattr(socket, "socket", without_ipv6)
    assert_ipv6_refused_in_one_line(tmp_path)


def test_the_command_on_a_taken_port_is_one_line(tmp_path):
    """The real command: exit status 2 and the one line alone on stderr."""
    agent().export(tmp_path / "ttt.azjax")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        process = serve("--agent", str(tmp_path / "ttt.azjax"), "--port", port)
        out, err = finish(process, 120)  # a server that does not stop is killed
    assert process.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Address already in use" in err


def test_the_command_serves_a_game_and_stops_at_ctrl_c(tmp_path):
    agent().export(tmp_path / "ttt.azjax")
    process = serve("--agent", str(tmp_path / "ttt.azjax"), "--port", "0", "--quiet")
    try:
        line = first_line(process)
        assert line.startswith("Playing tictactoe at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        host, port = url.removeprefix("http://").rstrip("/").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("POST", "/api/new", body='{"side": "second"}')
        view = json.loads(connection.getresponse().read())
        connection.close()
        assert view["game"] == "tictactoe" and len(view["moves"]) == 1
        process.send_signal(signal.SIGINT)
        out, err = finish(process, 180)  # its output, should it not stop
    finally:
        process.kill()
    assert process.returncode == 0 and "stopped" in out and "Traceback" not in err
