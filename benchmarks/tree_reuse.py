"""Search that keeps its tree between moves (`search.reuse_tree`), measured: how much of a
search the kept subtree carries, what it costs, what it buys in play (Connect Four and Go
7x7), and what it does to self-play training. The figures of docs/tree_reuse.md.

    python benchmarks/tree_reuse.py [--out runs/tree_reuse]
        [--parts share,time,matches,go,selfplay] [--games 400] [--go-games 100]
        [--go-level 10] [--minutes 20] [--seeds 4] [--eval-simulations 64] [--quick]

Parts (each writes OUT/<part>.json; a part already there is read back, not run again,
unless named in `--redo`):

1. share: the shipped Connect Four agent plays itself from 4 random opening plies, with
   PUCT and Gumbel at 16 and 64 simulations, its kept trees 2 and 4 times a search's
   simulations (`search.reuse_capacity`). Each search reports the visits its root
   brought from the kept tree: the mean share inherited / (inherited + simulations), as
   self-play keeps it (one tree, moved on every ply) and as a player in a match keeps it
   (each side its own tree, moved on by its own move and the reply).
2. time: seconds per move of a search with and without reuse on the same positions
   (batch = `--games`, `block_until_ready`, compilation excluded, median of 5), and the
   simulations a search without reuse runs in the time of one with reuse.
3. matches: the same network with reuse against without, `--games` games from 4 random
   opening plies (seats swapped, openings paired), noise off: PUCT and Gumbel at 16 and 64
   new simulations a move, kept trees of both capacities; at equal time (the search
   without reuse gets the simulations of part 2); and PUCT keeping its root's inherited
   visits (`search.reuse_root_visits`). Matches an earlier run played are kept (a part
   named in `--redo` plays only the ones it lacks).
4. go: the shipped go7x7 agent against GNU Go level `--go-level`, `--go-games` games
   with reuse and as many without (2 random opening plies).
5. selfplay: the connect_four cpu recipe, made smaller as in gumbel_few_simulations.py,
   trained `--minutes` minutes with and without `search.reuse_tree`, `--seeds` seeds
   each: the two arms at once, each pinned to its own core with its seeds vmapped in one
   process, so they get equal CPU time. Each seed's last network is graded on the solved
   Connect Four positions (the network alone, and PUCT and Gumbel of
   `--eval-simulations`); seeds are the unit: per-seed values, a 95% t-interval over seeds
   and Welch's test between the arms.

OUT/tree_reuse.md holds every table. `--quick` runs every part on tiny sizes (8 games, 4
simulations, GNU Go level 1, half a minute of self-play at the quick sizes, 2 seeds); its
figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# for gumbel_few_simulations (its grader and its smaller recipe), when imported as a module
sys.path.insert(0, str(ROOT / "benchmarks"))

PARTS = ("share", "time", "matches", "go", "selfplay")
POLICIES = ("puct", "gumbel")
OPENING_PLIES = 4
CAPACITIES = (2, 4)
"""`search.reuse_capacity`: a kept tree holds this many times a search's simulations."""
GO_OPENING_PLIES = 2


def c4_agent():
    """The shipped Connect Four agent (its own network, whatever the mode)."""
    from azjax import Agent

    return Agent.load("connect_four")


def searching(agent, policy: str, sims: int, reuse: bool, root_visits: bool = False,
              capacity: int = 2):
    """`agent` searching with `policy` and `sims` new simulations a move."""
    return agent.with_search(policy=policy, num_simulations=sims, reuse_tree=reuse,
                             reuse_root_visits=root_visits, reuse_capacity=capacity,
                             max_num_considered_actions=min(
                                 sims, agent.search_config.max_num_considered_actions))


# -------------------------------------------------------------------------------- share


def visit_shares(agent, policy: str, sims: int, games: int, seed: int, capacity: int
                 ) -> dict[str, float]:
    """Mean inherited share of the root's visits, over the searches of live games: with
    one tree moved on every ply (self-play) and with a tree per side (a match)."""
    import jax
    import numpy as np

    from azjax.core.search import deterministic, greedy_action
    from azjax.core.selfplay import tree_select
    from azjax.core.tree_reuse import empty_kept, make_reusing_search_fn
    from azjax.evaluation.match import opening_states

    player = searching(agent, policy, sims, True, capacity=capacity)
    env, config = agent.env, player.search_config
    reusing = make_reusing_search_fn(env, agent.network.apply, config)
    settings = deterministic(config.as_arrays())
    plies = env.max_plies or 200

    def run(key, per_side: bool):
        states, _ = opening_states(env, key, games, OPENING_PLIES)
        empty = empty_kept(env, agent.network.apply, config, agent.params, states)

        def ply(carry, key):
            states, trees = carry
            search_key, tie_key = jax.random.split(key)
            mover = states.current_player == 0
            kept = tree_select(mover, trees[0], trees[1]) if per_side else trees[0]
            found = reusing(agent.params, settings, search_key, states, kept)
            if per_side:
                trees = (tree_select(mover, found.kept, trees[0]),
                         tree_select(mover, trees[1], found.kept))
            else:
                trees = (found.kept, found.kept)
            share = found.share
            action = greedy_action(config, found.output, tie_key)
            live = ~states.terminated
            return (jax.vmap(env.step)(states, action), trees), (share, live)

        keys = jax.random.split(key, plies)
        _, (share, live) = jax.lax.scan(ply, (states, (empty, empty)), keys)
        return share, live

    out = {}
    for label, per_side in (("selfplay", False), ("match", True)):
        share, live = jax.jit(run, static_argnums=1)(jax.random.key(seed), per_side)
        share, live = np.asarray(share), np.asarray(live)
        out[label] = float(share[live].mean())
    return out


def part_share(args) -> dict[str, Any]:
    agent = c4_agent()
    rows = []
    for capacity in CAPACITIES:
        for policy in POLICIES:
            for sims in args.simulations:
                shares = visit_shares(agent, policy, sims, args.games, args.seed, capacity)
                rows.append({"policy": policy, "simulations": sims, "capacity": capacity,
                             **shares})
                print(f"share {policy} {sims} capacity {capacity}: self-play "
                      f"{shares['selfplay']:.3f}, match {shares['match']:.3f}", flush=True)
    return {"rows": rows}


# --------------------------------------------------------------------------------- time


def move_seconds(player, states, kept, repeats: int = 5) -> float:
    """Median seconds of one batched move of `player` (compilation excluded)."""
    import jax

    from azjax.core.players import compiled

    key = jax.random.key(0)
    if player.memory is None:
        call = lambda: compiled(player.policy)(player.params, states, key)  # noqa: E731
    else:
        call = lambda: compiled(player.memory.policy)(  # noqa: E731
            player.params, states, key, kept)
    jax.block_until_ready(call())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def part_time(args) -> dict[str, Any]:
    import jax

    from azjax.evaluation.match import opening_states

    agent = c4_agent()
    env = agent.env
    parents, _ = opening_states(env, jax.random.key(args.seed), args.games, OPENING_PLIES)
    rows = []
    for policy in POLICIES:
        for sims in args.simulations:
            reuse = searching(agent, policy, sims, True).player()
            fresh = searching(agent, policy, sims, False).player()
            # The tree a search of the parent positions kept, as in play.
            kept = reuse.memory.init(reuse.params, parents)
            actions, kept = jax.jit(reuse.memory.policy)(reuse.params, parents,
                                                         jax.random.key(1), kept)
            states = jax.vmap(env.step)(parents, actions)
            t_reuse = move_seconds(reuse, states, kept)
            t_fresh = move_seconds(fresh, states, None)
            equal = max(1, round(sims * t_reuse / t_fresh))
            t_equal = move_seconds(searching(agent, policy, equal, False).player(), states,
                                   None)
            rows.append({"policy": policy, "simulations": sims, "batch": args.games,
                         "reuse_s": t_reuse, "fresh_s": t_fresh, "ratio": t_reuse / t_fresh,
                         "equal_time_simulations": equal, "equal_time_fresh_s": t_equal})
            print(f"time {policy} {sims}: reuse {t_reuse * 1e3:.1f} ms, fresh "
                  f"{t_fresh * 1e3:.1f} ms (ratio {t_reuse / t_fresh:.3f}); fresh at "
                  f"{equal}: {t_equal * 1e3:.1f} ms", flush=True)
    return {"rows": rows, "device": jax.devices()[0].device_kind}


# ------------------------------------------------------------------------------ matches


def match_row(env, a, b, games: int, seed: int, opening: int, **label) -> dict[str, Any]:
    import jax

    from azjax.evaluation.match import play_match

    start = time.perf_counter()
    result = play_match(env, a, b, jax.random.key(seed), num_games=games,
                        opening_plies=opening)
    low, high = result.score_interval()
    row = {**label, "games": result.num_games, "wins": result.wins, "draws": result.draws,
           "losses": result.losses, "score": result.score, "low": low, "high": high,
           "elo": result.elo_diff, "seconds": time.perf_counter() - start}
    print(f"match {label}: {result.wins}/{result.draws}/{result.losses}, score "
          f"{100 * result.score:.1f}% ({100 * low:.1f}-{100 * high:.1f}%)", flush=True)
    return row


def match_arms(args, timing: dict[str, Any]) -> list[dict[str, Any]]:
    """Every match of the part: reuse (fresh root, and for PUCT the root keeping its
    inherited visits) against none at equal simulations, with kept trees of each
    capacity; at equal time with the capacity part 2 timed (both PUCT roots at the
    simulations timed with a fresh root: they do the same work)."""
    equal_time = {(r["policy"], r["simulations"]): r["equal_time_simulations"]
                  for r in timing["rows"]}
    arms = []
    for policy in POLICIES:
        for sims in args.simulations:
            for root_visits in ((False, True) if policy == "puct" else (False,)):
                for capacity in CAPACITIES:
                    kinds = [("equal simulations", sims)]
                    if capacity == CAPACITIES[0]:
                        kinds.append(("equal time", equal_time[policy, sims]))
                    for kind, fresh_sims in kinds:
                        arms.append({
                            "policy": policy, "simulations": sims, "kind": kind,
                            "fresh_simulations": fresh_sims, "capacity": capacity,
                            "reuse": ("root keeps inherited visits" if root_visits
                                      else "fresh root")})
    return arms


def part_matches(args, timing: dict[str, Any], done: list[dict[str, Any]]
                 ) -> dict[str, Any]:
    """The matches of `match_arms`; those in `done` (an earlier run's rows) are kept."""
    agent = c4_agent()
    keys = ("policy", "simulations", "kind", "fresh_simulations", "reuse")
    played = {tuple(r.get(k) for k in keys) + (r.get("capacity", 2),): r for r in done}
    rows = []
    for arm in match_arms(args, timing):
        key = tuple(arm[k] for k in keys) + (arm["capacity"],)
        if key in played:
            rows.append(played[key])
            continue
        reuse = searching(agent, arm["policy"], arm["simulations"], True,
                          root_visits=arm["reuse"] != "fresh root",
                          capacity=arm["capacity"])
        fresh = searching(agent, arm["policy"], arm["fresh_simulations"], False)
        rows.append(match_row(agent.env, reuse.player("alphazero", "reuse"),
                              fresh.player("alphazero", "fresh"), args.games, args.seed,
                              OPENING_PLIES, **arm))
    return {"rows": rows}


# ----------------------------------------------------------------------------------- go


def part_go(args) -> dict[str, Any]:
    from azjax import Agent
    from azjax.evaluation.player_specs import make_player

    agent = Agent.load("go7x7")
    gnugo = make_player(f"gnugo:{args.go_level}", agent.env)
    rows = []
    for reuse in (False, True):
        player = agent.with_search(reuse_tree=reuse).player("alphazero", "agent")
        rows.append(match_row(agent.env, player, gnugo, args.go_games, args.seed,
                              GO_OPENING_PLIES, reuse=reuse, level=args.go_level,
                              simulations=agent.search_config.num_simulations,
                              policy=agent.search_config.policy))
    return {"rows": rows}


# ----------------------------------------------------------------------------- selfplay


def selfplay_config(args, reuse: bool):
    import gumbel_few_simulations as few

    config = few.base_config(10_000_000, [f"search.reuse_tree={str(reuse).lower()}"],
                             args.quick)
    return config.replace(max_minutes=args.minutes, checkpoint_every=0,
                          checkpoint_every_minutes=max(args.minutes / 4, 0.5),
                          eval_every=0, eval_every_minutes=max(args.minutes / 4, 0.5))


def train_arm(args, reuse: bool) -> None:
    """One arm's seeds, vmapped in this process (run pinned to one core)."""
    from azjax.sweep.sweep import run_sweep

    run_sweep(selfplay_config(args, reuse), [], range(args.seeds), arm_dir(args.out, reuse))


def arm_dir(out: Path, reuse: bool) -> Path:
    return out / "selfplay" / ("reuse" if reuse else "fresh")


def part_selfplay(args) -> dict[str, Any]:
    import gumbel_few_simulations as few
    from _pinned import run_pinned

    commands = []
    for reuse in (False, True):
        command = [sys.executable, __file__, "--train-arm", str(reuse).lower(), "--out",
                   str(args.out), "--minutes", str(args.minutes), "--seeds", str(args.seeds)]
        if args.quick:
            command.append("--quick")
        commands.append(command)
    run_pinned(commands)
    grader = few.Grader(50 if args.quick else 1000)
    rows = []
    for reuse in (False, True):
        runs = sorted(p for p in arm_dir(args.out, reuse).rglob("config.json"))
        for index, config in enumerate(runs):
            run = config.parent
            grades = grader.evaluate(run, args.eval_simulations, index)
            records = [json.loads(line) for line in (run / "metrics.jsonl").open()]
            last = records[-1]
            rows.append({"reuse": reuse, "run": str(run.relative_to(args.out)),
                         "iterations": last.get("iteration"), "games": last.get("games"),
                         "wall_time": last.get("wall_time"),
                         "reused_visits": statistics.mean(
                             r["reused_visits"] for r in records if "reused_visits" in r)
                         if reuse else 0.0, **grades})
            print(f"selfplay reuse={reuse} {run.name}: net optimal "
                  f"{grades['net_optimal']:.3f}, gumbel optimal {grades['gumbel_optimal']:.3f}",
                  flush=True)
    return {"rows": rows, "minutes": args.minutes, "seeds": args.seeds,
            "eval_simulations": args.eval_simulations}


# ------------------------------------------------------------------------------- report


def percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def share_table(data) -> str:
    lines = ["| search | simulations | reuse_capacity | self-play (next ply) | "
             "match (own moves) |", "| --- | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['policy']} | {r['simulations']} | {r.get('capacity', 2)} | "
                     f"{percent(r['selfplay'])} | {percent(r['match'])} |")
    return "\n".join(lines)


def time_table(data) -> str:
    lines = [f"| search | simulations | reuse (ms a move of {data['rows'][0]['batch']} games)"
             " | fresh (ms) | reuse / fresh | fresh in reuse's time |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['policy']} | {r['simulations']} | {1e3 * r['reuse_s']:.1f} | "
                     f"{1e3 * r['fresh_s']:.1f} | {r['ratio']:.2f} | "
                     f"{r['equal_time_simulations']} ({1e3 * r['equal_time_fresh_s']:.1f} ms) |")
    return "\n".join(lines)


def match_table(rows, first: str) -> str:
    lines = [f"| {first} | games | W / D / L | score (95% Wilson) | Elo |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['games']} | {r['wins']} / {r['draws']} / "
                     f"{r['losses']} | {percent(r['score'])} ({percent(r['low'])}-"
                     f"{percent(r['high'])}) | {r['elo']:+.0f} |")
    return "\n".join(lines)


def selfplay_tables(data) -> str:
    """The arms (mean and 95% t-interval over seeds, `share_ci`), each seed, and each
    metric's difference between the arms (Welch, `welch_difference`)."""
    from azjax.evaluation.stats import share_ci, welch_difference

    metrics = ("net_optimal", "puct_optimal", "gumbel_optimal", "net_result_kept")
    lines = ["| arm | seeds | iterations | games | reused visits | "
             + " | ".join(metrics) + " |", "| --- " + "| ---: " * (4 + len(metrics)) + "|"]
    arms = {reuse: [r for r in data["rows"] if r["reuse"] == reuse] for reuse in (False, True)}
    for reuse, rows in arms.items():
        cells = []
        for metric in metrics:
            mean, low, high = share_ci([r[metric] for r in rows])
            cells.append(f"{percent(mean)} ({percent(low)}-{percent(high)})")
        lines.append(
            f"| {'reuse' if reuse else 'fresh'} | {len(rows)} | "
            f"{statistics.mean(r['iterations'] for r in rows):.0f} | "
            f"{statistics.mean(r['games'] for r in rows):,.0f} | "
            f"{percent(statistics.mean(r['reused_visits'] for r in rows))} | "
            + " | ".join(cells) + " |")
    seeds = ["", "| arm | run | " + " | ".join(metrics) + " |",
             "| --- | --- " + "| ---: " * len(metrics) + "|"]
    for reuse, rows in arms.items():
        for r in rows:
            seeds.append(f"| {'reuse' if reuse else 'fresh'} | {r['run']} | "
                         + " | ".join(percent(r[m]) for m in metrics) + " |")
    tests = ["", "| metric | reuse - fresh (95% Welch interval) | p |",
             "| --- | ---: | ---: |"]
    for metric in metrics:
        diff, low, high, p = welch_difference([r[metric] for r in arms[False]],
                                              [r[metric] for r in arms[True]])
        tests.append(f"| {metric} | {100 * diff:+.1f} ({100 * low:+.1f} to {100 * high:+.1f}) "
                     f"points | {p:.2f} |")
    return "\n".join(lines + seeds + tests)


def report(args, results: dict[str, Any]) -> str:
    parts = [f"# Tree reuse: the figures\n\nBy `python benchmarks/tree_reuse.py "
             f"{' '.join(args.argv)}`.\n"]
    if "share" in results:
        parts += ["## The share of a search a kept subtree carries\n",
                  share_table(results["share"]), ""]
    if "time" in results:
        parts += ["## What reuse costs a move\n", time_table(results["time"]), ""]
    if "matches" in results:
        rows = [{**r, "label": f"{r['policy']} {r['simulations']} ({r['reuse']}, capacity "
                 f"{r.get('capacity', 2)}) vs {r['fresh_simulations']} fresh, {r['kind']}"}
                for r in results["matches"]["rows"]]
        parts += ["## Connect Four: reuse against none, the same network\n",
                  match_table(rows, "reuse vs fresh"), ""]
    if "go" in results:
        rows = [{**r, "label": f"{'reuse' if r['reuse'] else 'fresh'} ({r['policy']} "
                 f"{r['simulations']}) vs gnugo:{r['level']}"} for r in results["go"]["rows"]]
        parts += ["## Go 7x7 against GNU Go\n", match_table(rows, "go7x7 agent"), ""]
    if "selfplay" in results:
        data = results["selfplay"]
        parts += [f"## Self-play training, {data['minutes']:g} minutes an arm on one core, "
                  f"{data['seeds']} seeds vmapped\n",
                  f"Graded on the solved Connect Four positions; searches of "
                  f"{data['eval_simulations']} simulations; mean and 95% t-interval over "
                  "seeds.\n", selfplay_tables(data), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/tree_reuse"))
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--redo", default="", help="parts to run again")
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--go-games", type=int, default=100)
    parser.add_argument("--go-level", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--eval-simulations", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--train-arm", choices=("true", "false"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = argv
    args.simulations = (4,) if args.quick else (16, 64)
    if args.quick:
        args.games, args.go_games, args.go_level = 8, 2, 1
        args.minutes, args.seeds, args.eval_simulations = 0.5, 2, 4
    if args.train_arm is not None:
        train_arm(args, args.train_arm == "true")
        return 0
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for part in PARTS:
        path = args.out / f"{part}.json"
        if part not in parts:
            if path.exists():
                results[part] = json.loads(path.read_text())
            continue
        if path.exists() and part not in args.redo.split(","):
            results[part] = json.loads(path.read_text())
            continue
        if part == "matches":
            if "time" not in results:
                parser.error("matches needs the time part (its equal-time simulations)")
            done = json.loads(path.read_text())["rows"] if path.exists() else []
            results[part] = part_matches(args, results["time"], done)
        else:
            results[part] = globals()[f"part_{part}"](args)
        path.write_text(json.dumps(results[part], indent=1))
    text = report(args, results)
    (args.out / "tree_reuse.md").write_text(text)
    print(text)
    print(f"wrote {args.out / 'tree_reuse.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
