"""Play a trained agent in the browser: `python -m azjax.serve --run-dir DIR` (or
`--agent FILE`, or `--agent NAME` for an agent that ships with azjax: `tictactoe`,
`connect_four`, `go7x7`) serves a page on http://127.0.0.1:8765/ where a person clicks moves
against the agent, sees its reply and its analysis board, takes moves back and starts
new games on either side.

The page is one static HTML file (`azjax/static/play.html`) with no build step; it talks
to a small JSON API on the standard library's HTTP server:

    POST /api/new   {"side": "first" | "second" | "random"}
    POST /api/move  {"id": ID, "ply": N, "action": A}  (or "move": "b2")
    POST /api/undo  {"id": ID, "ply": N}
    POST /api/hint  {"id": ID, "ply": N}
    POST /api/game  {"id": ID}

Each answers with the game as `azjax.run.browser.web_games.GameTable` describes it, or with
status 4xx and `{"error": "..."}` for a request it refuses (unknown game, stale page,
illegal move, malformed JSON, a body over 16 KiB). The server listens on 127.0.0.1
unless `--host` says otherwise (an IPv6 address such as `::1` too: the page is then at
http://[::1]:8765/).

Only its own page may use it: a request whose Host is not the server's address, or
whose Origin (when it has one) is not that address, gets status 403 and one line saying
why (`OwnAddress.refusal`). A web page elsewhere cannot then start games and spend the
agent's compute, neither by a cross-site request (its Origin is its own) nor through a
name of its own that resolves to this machine (DNS rebinding: its Host is that name).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import http.server
import ipaddress
import json
import socket
import sys
import traceback
import urllib.parse
from importlib import resources
from typing import Any

from azjax.commands.errors import one_line_errors, run_script
from azjax.run.agents.agent_source import REUSE_TREE_HELP, check_source, load_agent
from azjax.run.agents.shipped_agents import AGENT_HELP
from azjax.run.browser.web_games import GameError, GameTable
from azjax.run.config import check_seed

MAX_BODY = 16 * 1024
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
ANY_ADDRESS = ("", "0.0.0.0", "::")


def _address(netloc: str) -> tuple[str, int] | None:
    """(host name in lower case, port) of `host[:port]` (port 80 when absent), or None
    when it is not one."""
    try:
        parts = urllib.parse.urlsplit(f"//{netloc}")
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.netloc != netloc or "@" in netloc:
        return None
    return name, 80 if port is None else port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class OwnAddress:
    """Where the server's own page is: the host names (lower case) that reach it, on
    its port. `any_ip` (listening on every interface): any IP address reaches it too."""

    names: frozenset[str]
    port: int
    any_ip: bool = False

    @classmethod
    def of(cls, bound: str, port: int) -> OwnAddress:
        """The address of a server listening on `bound` (`--host`) and `port`: that name;
        every loopback name too for a loopback address; for every interface's address,
        any IP address, `localhost` and this machine's names."""
        bound = bound.lower()
        if bound in ANY_ADDRESS:
            names = {"localhost", socket.gethostname().lower(), socket.getfqdn().lower()}
            return cls(frozenset(names), port, any_ip=True)
        if bound in LOCAL_HOSTS or (_is_ip(bound) and ipaddress.ip_address(bound).is_loopback):
            return cls(frozenset({bound, *LOCAL_HOSTS}), port)
        return cls(frozenset({bound}), port)

    def refusal(self, host: str | None, origin: str | None) -> str | None:
        """Why a request is refused, or None when it comes from this server's own page.

        Args:
          host: the request's Host header (None when absent).
          origin: its Origin header (None when absent: not a browser's cross-site request).

        Returns:
          One line naming what is wrong, or None. Another name would be another site's,
          resolving to this machine (DNS rebinding); IP addresses, `localhost` and this
          machine's names are none that another site can make its own, and a cross-site
          request names its own page in Origin.
        """
        if host is None:
            return "a request needs a Host header naming this server"
        address = _address(host)
        known = address is not None and address[1] == self.port and (
            address[0] in self.names or (self.any_ip and _is_ip(address[0])))
        if not known:
            return f"Host {host[:80]!r} is not this server's address"
        if origin is not None and not (origin.startswith("http://")
                                       and _address(origin[len("http://"):]) == address):
            return f"Origin {origin[:80]!r} is not this server's page"
        return None


def page(game: str) -> bytes:
    """The play page for `game` (its name in the title)."""
    html = resources.files("azjax").joinpath("static/play.html").read_text()
    return html.replace("__GAME__", game.replace("<", "").replace("&", "")).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    """Requests of one connection; the table and the page are the server's."""

    server: "Server"
    timeout = 10  # seconds a connection may stay silent
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes: without this, the second waits for the
        # client's delayed ACK of the first (40 ms a request on Linux).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if self._refused():
            return
        if self.path.split("?")[0] in ("/", "/index.html"):
            self._send(200, self.server.page, "text/html; charset=utf-8")
        else:
            self._error(404, f"no page at {self.path[:60]}")

    def do_POST(self) -> None:  # noqa: N802
        if self._refused():
            return
        actions = {"/api/new": self.server.table.new, "/api/move": self.server.table.move,
                   "/api/undo": self.server.table.undo, "/api/hint": self.server.table.hint,
                   "/api/game": self.server.table.show}
        action = actions.get(self.path)
        if action is None:
            self._error(404, f"no API at {self.path[:60]}")
            return
        try:
            request = self._json_body()
            reply = action(request)
        except GameError as err:
            self._error(409 if "out of date" in str(err) else 400, str(err))
            return
        except Exception:  # a bug: the server says so and keeps serving
            traceback.print_exc(file=sys.stderr)
            self._error(500, "internal error: the server could not answer this request")
            return
        self._send(200, json.dumps(reply).encode(), "application/json")

    def _refused(self) -> bool:
        """Answers 403 to a request that is not from the server's own page
        (`OwnAddress.refusal`); returns whether it did."""
        reason = self.server.address.refusal(self.headers.get("Host"),
                                             self.headers.get("Origin"))
        if reason is None:
            return False
        self.close_connection = True  # its body, if any, is not read
        self._error(403, reason)
        return True

    def _json_body(self) -> dict[str, Any]:
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise GameError("a request needs a Content-Length")
        # ASCII digits only: str.isdigit also takes '²', which int() refuses.
        if not (length.isascii() and length.isdigit()):
            self.close_connection = True
            raise GameError(f"Content-Length must be a number of bytes, got {length[:20]!r}")
        digits = length.lstrip("0")  # int() refuses more than 4,300 digits
        if len(digits) > len(str(MAX_BODY)) or int(digits or "0") > MAX_BODY:
            self.close_connection = True
            raise GameError(f"a request may hold at most {MAX_BODY} bytes, not {length[:20]}")
        body = self.rfile.read(int(length))
        try:
            request = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise GameError("the request is not JSON") from None
        if not isinstance(request, dict):
            raise GameError("the request must be a JSON object")
        return request

    def _error(self, status: int, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if not self.server.quiet:
            super().log_message(format, *args)


def _is_ipv6(host: str) -> bool:
    return _is_ip(host) and ipaddress.ip_address(host).version == 6


class Server(http.server.ThreadingHTTPServer):
    """The HTTP server of one `GameTable`, on IPv6 for an IPv6 address (`::1`, `::`);
    `url` is where the page is."""

    # server_close() waits for the requests in flight (each connection may idle 10 s at
    # most): a thread left inside JAX at interpreter exit can abort the process.
    daemon_threads = False

    def __init__(self, table: GameTable, host: str = "127.0.0.1", port: int = 8000,
                 quiet: bool = False):
        self.table = table
        self.page = page(table.env.name)
        self.quiet = quiet
        if _is_ipv6(host):
            self.address_family = socket.AF_INET6
        try:
            super().__init__((host, port), Handler)
        except OSError as err:
            if err.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL) and _is_ipv6(host):
                raise OSError(err.errno, f"cannot listen on {host}: this machine has no "
                              f"IPv6 there ({err.strerror}); use --host 127.0.0.1") from None
            raise
        self.address = OwnAddress.of(host, self.server_address[1])

    @property
    def url(self) -> str:
        """The page's address: `http://HOST:PORT/`, an IPv6 HOST in brackets."""
        host, port = self.server_address[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.serve (--run-dir DIR | --agent FILE|NAME) [--host H] [--port P]
    [--simulations N] [--reuse-tree] [--seed S]`; serves until Ctrl-C; exit status 2 with
    one `error:` line for a bad argument, run or file, or a port in use."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.serve",
        description="Play a trained agent in the browser: a page on localhost where you "
                    "click your moves and see the agent's replies and analysis.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a training run directory (newest checkpoint) "
                        "or an agent file")
    source.add_argument("--agent", metavar="FILE|NAME", help=AGENT_HELP)
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port (default 8765)")
    parser.add_argument("--simulations", type=int, help="search simulations per agent move")
    parser.add_argument("--reuse-tree", action="store_true", help=REUSE_TREE_HELP)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no line per request")
    args = parser.parse_args(argv)
    check_seed(args.seed)
    check_source(args.run_dir, args.agent)
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0-65535, got {args.port}")
    agent = load_agent(None, args.run_dir or args.agent, args.simulations,
                       reuse_tree=args.reuse_tree)
    server = Server(GameTable(agent, args.seed), args.host, args.port, args.quiet)
    if args.host not in LOCAL_HOSTS:
        print(f"warning: listening on {args.host}: other machines can reach this page",
              file=sys.stderr)
    print(f"Playing {agent.env.name} at {server.url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped")
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    run_script(main)
