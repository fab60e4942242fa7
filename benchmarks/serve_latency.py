"""How long the browser page waits for the agent: a move request to `python -m azjax.serve`
(the human's move, the agent's search, its analysis board and both pictures, over HTTP
on localhost) against the agent's search alone (`agent.analyse` on one position), the
reference, measured in the same process.

    python benchmarks/serve_latency.py                       # tic-tac-toe and Connect Four
    python benchmarks/serve_latency.py --games 20 --run-dir runs/connect_four

Each game's agent is the recipe's network, untrained unless `--run-dir` gives a run (the
time of a search does not depend on the weights). Compilation is excluded: one game is
played first and not counted. Figures: median milliseconds per move request and per
search, and their ratio (the server's overhead is the ratio minus one).

`--quick`: one tic-tac-toe game of the recipe at `benchmarks/_quick.py`'s sizes, in seconds
(to check the script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
import xml.etree.ElementTree as ET

import _quick
import jax
import numpy as np

from azjax import Agent
from azjax.commands.serve import Server
from azjax.core.networks import init_params
from azjax.run.browser.web_games import GameTable
from azjax.run.recipes import recipe


def untrained(game: str, quick: bool = False) -> Agent:
    """The recipe's agent with freshly initialised weights (at `_quick`'s sizes when
    `quick`)."""
    config = recipe(game, "cpu")
    if quick:
        config = _quick.shrink(config)
    env = config.make_env()
    params = init_params(env, config.program.network, jax.random.key(0))
    return Agent(env, config.program, params)


def post(connection: http.client.HTTPConnection, path: str, body: dict) -> dict:
    connection.request("POST", path, body=json.dumps(body))
    response = connection.getresponse()
    reply = json.loads(response.read())
    if response.status != 200:
        raise RuntimeError(reply)
    return reply


def move_times(server: Server, games: int, seed: int) -> list[float]:
    """Seconds of each move request of `games` games with random legal human moves."""
    rng = np.random.default_rng(seed)
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=600)
    times = []
    for _ in range(games):
        view = post(connection, "/api/new", {"side": "first"})
        while not view["over"]:
            targets = [int(e.get("data-action")) for e in ET.fromstring(view["board"]).iter()
                       if e.get("class") == "target"]
            targets += [b["action"] for b in view["buttons"]]
            start = time.perf_counter()
            view = post(connection, "/api/move", {"id": view["id"], "ply": view["ply"],
                                                  "action": int(rng.choice(targets))})
            times.append(time.perf_counter() - start)
    connection.close()
    return times


def search_times(agent: Agent, positions: int, seed: int) -> list[float]:
    """Seconds of `agent.analyse` on one position, blocked until ready."""
    env = agent.env
    state = env.init(jax.random.key(seed))
    batched = jax.tree.map(lambda x: x[None], state)
    jax.block_until_ready(agent.analyse(batched, jax.random.key(0)))  # compiled here
    times = []
    for i in range(positions):
        start = time.perf_counter()
        jax.block_until_ready(agent.analyse(batched, jax.random.key(i)))
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", action="append", help="tictactoe, connect_four, ...")
    parser.add_argument("--run-dir", help="a run whose agent to serve (one game)")
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = _quick.parse(parser, games=1)
    games = args.game or (["tictactoe"] if args.quick else ["tictactoe", "connect_four"])
    agents = ([Agent.load(args.run_dir)] if args.run_dir else
              [untrained(g, args.quick) for g in games])
    print(f"backend {jax.default_backend()}; {args.games} games per agent, random human "
          "moves; medians")
    for agent in agents:
        server = Server(GameTable(agent, seed=args.seed), port=0, quiet=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        move_times(server, 1, args.seed + 1)  # compiles
        moves = move_times(server, args.games, args.seed)
        searches = search_times(agent, len(moves), args.seed)
        server.shutdown()
        server.server_close()
        move, search = statistics.median(moves), statistics.median(searches)
        print(f"{agent.env.name:>14}: move request {1e3 * move:7.1f} ms, search alone "
              f"{1e3 * search:7.1f} ms ({agent.search_config.num_simulations} simulations), "
              f"ratio {move / search:5.2f} over {len(moves)} moves")


if __name__ == "__main__":
    main()
