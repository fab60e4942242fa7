"""The host side of `envs.check_env`'s random games: from what the scan of
`envs.conformance.games` recorded, the first rule the games break (in the order of
`RULES`), shown by the shortest game that breaks it, the pictures of a few states, and
the replay of one game alone."""

from __future__ import annotations

import math

import jax
import numpy as np

from envs.conformance.games import Games
from envs.conformance.pictures import picture_problem
from envs.conformance.rules import EnvCheckError, format_moves
from envs.conformance.static import differing_leaves, host_leaves, init_keys


def _first(flags: np.ndarray) -> tuple[int, int] | None:
    """The (ply, game) of the earliest True entry of [T, n, ...] flags, fewest plies first."""
    hits = np.argwhere(flags.reshape(flags.shape[0], flags.shape[1], -1).any(axis=2))
    return None if len(hits) == 0 else (int(hits[0, 0]), int(hits[0, 1]))


def _moves(g: Games, ply: int, game: int, extra: list[int] | None = None) -> list[int]:
    return g.rec["move"][:ply, game].tolist() + (extra or [])


def _fail(g: Games, prop: str, message: str, actions: list[int], game: int, ply: int):
    raise EnvCheckError(prop, message, actions, env=g.env, seed=g.seed,
                        num_games=g.num_games, game=game, ply=ply)


def _move_text(g: Games, action: int) -> str:
    text = format_moves(g.env, [action])[0]
    return f"action {action}" if text == f"#{action}" or text == str(action) else (
        f"{text} (action {action})")


def _leaves_text(g: Games, flags: np.ndarray) -> str:
    return ", ".join(n for n, f in zip(g.names, flags) if f) or "(none)"


def check_games(g: Games) -> None:
    """Raises EnvCheckError for the first rule the recorded games break (in the order of
    `RULES`, deterministic last), showing the shortest game that breaks it.

    Args:
      g: the recorded random games (`play_games`).

    Raises:
      EnvCheckError: a rule is broken.
    """
    rec = g.rec
    if rec["init_rewards"].any():
        game = int(np.argmax(rec["init_rewards"]))
        _fail(g, "rewards-only-at-end", "the initial state has non-zero rewards", [], game, 0)
    if hit := _first(rec["player_bad"]):
        t, i = hit
        _fail(g, "types", f"current_player is {rec['player'][t, i]} after {t} plies; it is the "
                          "id of the player to move, 0 or 1", _moves(g, t, i), i, t)
    if hit := _first(rec["move_bad"]):
        t, i = hit
        what = ("a live state has no legal move" if rec["live"][t, i] else
                f"a finished game has {rec['legal_count'][t, i]} legal moves")
        _fail(g, "live-has-move", f"after {t} plies {what}", _moves(g, t, i), i, t)
    _check_step_count(g)
    for flag, prop, what in (
        ("reward_mid", "rewards-only-at-end", "a step that does not end the game gives rewards"),
        ("reward_values", "rewards-values", "the step that ends the game gives rewards"),
        ("reward_sum", "rewards-zero-sum", "the step that ends the game gives rewards"),
    ):
        if hit := _first(rec[flag]):
            t, i = hit
            _fail(g, prop, f"{what} {rec['rewards'][t, i].tolist()} (ply {t + 1})",
                  _moves(g, t + 1, i), i, t)
    _check_after_end_and_forfeits(g)
    live_at_limit = rec["live"][g.max_plies]
    if live_at_limit.any():
        i = int(np.argmax(live_at_limit))
        _fail(g, "ends", f"the game is still live after max_plies = {g.max_plies} plies; raise "
                         "max_plies or end the game (a move cap) within it",
              _moves(g, g.max_plies, i), i, g.max_plies)
    _check_symmetry_samples(g)
    _check_observation(g)
    _check_perspective(g)
    _check_winners(g)
    _check_score_margin(g)
    _check_ownership(g)
    _check_futile_moves(g)


def _check_after_end_and_forfeits(g: Games) -> None:
    rec = g.rec
    # The earliest failing step; on a tie, the move that was legal before the end.
    frozen = [(hit, order, flag) for order, flag in enumerate(("frozen_move", "frozen_bad"))
              if (hit := _first(rec[flag]))]
    if frozen:
        (t, i), _, flag = min(frozen)
        action = int(rec["move" if flag == "frozen_move" else "bad"][t, i])
        ended = int(rec["live"][:, i].sum())
        _fail(g, "frozen", f"the game ended after {ended} plies, and a step after that with "
                           f"{_move_text(g, action)} changed {_leaves_text(g, rec[flag][t, i])}",
              _moves(g, t, i, [action]), i, t)
    if hit := _first(rec["illegal"]):
        t, i = hit
        action = int(rec["bad"][t, i])
        kind = "out-of-range" if not 0 <= action < g.env.num_actions else "illegal"
        _fail(g, "illegal-move", f"after {t} plies, player {rec['player'][t, i]} played the "
                                 f"{kind} {_move_text(g, action)}, and the result differs from "
                                 f"the forfeit in {_leaves_text(g, rec['illegal'][t, i])}",
              _moves(g, t, i, [action]), i, t)


def _check_step_count(g: Games) -> None:
    rec = g.rec
    if rec["step_count"][0].any():
        i = int(np.argmax(rec["step_count"][0] != 0))
        _fail(g, "step-count", f"env.init gives step_count {int(rec['step_count'][0, i])}; it "
                               "counts the plies played, from 0", [], i, 0)
    if hit := _first(rec["count_bad"]):
        t, i = hit
        move = int(rec["move"][t, i])
        _fail(g, "step-count", f"after {t} plies, {_move_text(g, move)} takes step_count from "
                               f"{int(rec['step_count'][t, i])} to "
                               f"{int(rec['step_count_after'][t, i])}, not "
                               f"{int(rec['step_count'][t, i]) + 1}",
              _moves(g, t + 1, i), i, t)


def _check_observation(g: Games) -> None:
    rec = g.rec
    if hit := _first(rec["obs_kept"]):
        t, i = hit
        _fail(g, "observation", f"after {t} plies, player {rec['player'][t, i]} plays "
                                f"{_move_text(g, int(rec['move'][t, i]))} and the observation "
                                "stays as it was: the network sees the position after the "
                                "move as the one before it (is the observation made from the "
                                "new state, for the new player to move?)",
              _moves(g, t + 1, i), i, t)
    # States equal in every other leaf, with different observations: the one reached in
    # the fewest plies of each such group against the shortest that differs from it.
    t_idx, i_idx = (x.reshape(-1) for x in np.indices(rec["live"].shape))
    obs = rec["obs_hash"].reshape(-1, 2).astype(np.int64)
    _, group = np.unique(rec["rest_hash"].reshape(-1, 2), axis=0, return_inverse=True)
    group = group.reshape(-1)
    looks = np.bincount(np.unique(np.column_stack([group, obs]), axis=0)[:, 0])
    clash = np.flatnonzero(looks[group] > 1)
    if len(clash) == 0:
        return
    order = clash[np.lexsort((i_idx[clash], t_idx[clash]))]
    a = order[0]
    b = next(m for m in order if group[m] == group[a] and (obs[m] != obs[a]).any())
    (t1, i1), (t2, i2) = (int(t_idx[a]), int(i_idx[a])), (int(t_idx[b]), int(i_idx[b]))
    other = " ".join(format_moves(g.env, _moves(g, t2, i2))) or "(none)"
    _fail(g, "observation", f"game {i1} after {t1} plies and game {i2} after {t2} plies "
                            f"({other}) reach states equal in every leaf but the "
                            "observation, and their observations differ: the observation "
                            "does not follow from the state (does it depend on the way the "
                            "position was reached?)", _moves(g, t1, i1), i1, t1)


def _check_symmetry_samples(g: Games) -> None:
    rec = g.rec
    valid = rec["sample_live"][:, :, None]
    for flag, prop in (("transform_obs", "symmetries-transform"),
                       ("transform_mask", "symmetries-transform"),
                       ("commute", "symmetries-commute")):
        flags = rec[flag].reshape(rec[flag].shape[:3] + (-1,)).any(axis=3) & valid
        hits = np.argwhere(flags)
        if len(hits) == 0:
            continue
        t, s, sym = (int(x) for x in hits[0])
        i = int(rec["sample"][t, s])
        move = int(rec["sample_first"][t, s])
        if prop == "symmetries-commute":
            mapped = int(rec["sample_move"][t, s, sym])
            text = (f"for symmetry g = {sym}, the move {_move_text(g, move)}, mapped to "
                    f"{_move_text(g, mapped)} and played on transform_state(s, g), gives a state "
                    f"that differs from transform_state(step(s, {move}), g) in "
                    f"{_leaves_text(g, rec['commute'][t, s, sym])}")
            _fail(g, prop, text, _moves(g, t, i, [move]), i, t)
        part = "observation" if flag == "transform_obs" else "legal mask"
        helper = "observation" if flag == "transform_obs" else "policy"
        _fail(g, prop, f"after {t} plies, transform_state(s, {sym}) moves the {part} otherwise "
                       f"than symmetries.{helper}(..., {sym})", _moves(g, t, i), i, t)


def _check_perspective(g: Games) -> None:
    rec = g.rec
    t_idx, i_idx = np.nonzero(rec["live"])
    if len(t_idx) == 0:
        return
    keys = np.concatenate([rec["obs_hash"][t_idx, i_idx].astype(np.int64),
                           rec["mask_hash"][t_idx, i_idx].astype(np.int64),
                           rec["move"][t_idx, i_idx, None].astype(np.int64)], axis=1)
    values = rec["mover_reward"][t_idx, i_idx].astype(np.float64)
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.reshape(-1)
    low = np.full(group.max() + 1, np.inf)
    high = np.full(group.max() + 1, -np.inf)
    np.minimum.at(low, group, values)
    np.maximum.at(high, group, values)
    bad = np.flatnonzero(low[group] != high[group])
    if len(bad) == 0:
        return
    # A conflict between the two players if there is one (the classic bug), else one of
    # a player with itself (a result that the observation does not determine); the one
    # whose longer game is shortest, with the shortest game on each side.
    players = rec["player"][t_idx, i_idx]
    best = None
    order = np.lexsort((i_idx, t_idx))  # shortest games first
    for k in np.unique(group[bad]):
        members = order[group[order] == k]
        # The shortest game of each (player, reward) class, then the best pair of classes.
        classes = {}
        for m in members:
            classes.setdefault((int(players[m]), float(values[m])), m)
        for a in classes.values():
            for b in classes.values():
                if values[a] != values[b] and t_idx[a] <= t_idx[b]:
                    score = (players[a] == players[b], t_idx[b], t_idx[a])
                    if best is None or score < best[0]:
                        best = (score, (a, b))
    first, second = best[1]

    def side(m):
        t, i = int(t_idx[m]), int(i_idx[m])
        return t, i, int(rec["player"][t, i]), values[m], _moves(g, t + 1, i)

    t1, i1, p1, v1, moves1 = side(first)
    t2, i2, p2, v2, moves2 = side(second)
    other = " ".join(format_moves(g.env, moves2))
    why = ("the observation does not determine the result of the move (it depends on "
           "something hidden, such as the ply count near a move cap)" if p1 == p2 else
           "the rewards do not speak for the player who moves (rewards indexed by a fixed "
           "or the wrong player id?)")
    move = _move_text(g, int(moves1[-1]))
    _fail(g, "perspective",
          f"player {p1} playing {move} after {t1} plies gets reward {v1:+g}, but "
          f"player {p2} making the same move from the same observation and legal mask after "
          f"{t2} plies (game {i2}: {other}) gets {v2:+g}: {why}", moves1, i1, t1)


MIN_DECISIVE = 16
"""Distinct decisive random games needed before "winners" judges that one player id
wins all."""
MIN_ENDED_BY_EACH = 8
"""Distinct decisive games ended by each player id needed before "winners" compares the
two."""


def _endings(g: Games) -> tuple[np.ndarray, np.ndarray]:
    """(ply, game) of the step that ended each finished game, shortest games first."""
    t_idx, i_idx = np.nonzero(g.rec["ended"])
    order = np.lexsort((i_idx, t_idx))
    return t_idx[order], i_idx[order]


def _distinct(g: Games, i_idx: np.ndarray) -> np.ndarray:
    """bool [m]: whether each of the games `i_idx` is the first of its kind (the same
    initial state and moves make the same game)."""
    rec = g.rec
    if len(i_idx) == 0:
        return np.zeros(0, bool)
    moves = np.where(rec["live"][:, i_idx], rec["move"][:, i_idx], -2).T.astype(np.int64)
    start = np.concatenate([rec["rest_hash"][0, i_idx], rec["obs_hash"][0, i_idx]], axis=1)
    _, first = np.unique(np.concatenate([start.astype(np.int64), moves], axis=1), axis=0,
                         return_index=True)
    keep = np.zeros(len(i_idx), bool)
    keep[first] = True
    return keep


def _check_winners(g: Games) -> None:
    rec = g.rec
    t_idx, i_idx = _endings(g)
    r0 = rec["rewards"][t_idx, i_idx, 0]
    # Games played alike are one piece of evidence (a game with one line of play, one).
    decisive = (r0 != 0) & _distinct(g, i_idx)
    winner = np.where(r0 > 0, 0, 1)
    mover = rec["player"][t_idx, i_idx]
    ended_by = [decisive & (mover == p) for p in (0, 1)]
    # One id winning every game is a fault only where both ids made a last move: a game
    # whose last mover always wins (or loses) may well be won by one id every time.
    if (decisive.sum() >= MIN_DECISIVE and len(set(winner[decisive].tolist())) == 1
            and all(e.any() for e in ended_by)):
        w = int(winner[decisive][0])
        k = int(np.argmax(ended_by[1 - w]))
        t, i = int(t_idx[k]), int(i_idx[k])
        _fail(g, "winners", f"player {w} won all {int(decisive.sum())} distinct decisive random "
                            f"games, the {int(ended_by[1 - w].sum())} that player {1 - w} ended "
                            f"with its own move among them: are the rewards given to a fixed "
                            f"player id? (this game, ended by player {1 - w}: rewards "
                            f"{rec['rewards'][t, i].tolist()} after {t + 1} plies)",
              _moves(g, t + 1, i), i, t)
    won = rec["mover_reward"][t_idx, i_idx] > 0
    if min(int(e.sum()) for e in ended_by) < MIN_ENDED_BY_EACH:
        return
    always = [bool(won[e].all()) for e in ended_by]
    never = [bool((~won[e]).all()) for e in ended_by]
    for p in (0, 1):
        if always[p] and never[1 - p]:
            k = int(np.argmax(ended_by[1 - p]))
            t, i = int(t_idx[k]), int(i_idx[k])
            _fail(g, "winners",
                  f"player {p} won all {int(ended_by[p].sum())} distinct decisive games in "
                  f"which it made the last move, and player {1 - p} lost all "
                  f"{int(ended_by[1 - p].sum())} in which it did: the rewards follow the seat, "
                  f"not the game (rewards indexed by the mover, or by a fixed player id?); this "
                  f"game, ended by player {1 - p}, gave rewards {rec['rewards'][t, i].tolist()}",
                  _moves(g, t + 1, i), i, t)


def _check_score_margin(g: Games) -> None:
    rec = g.rec
    if "margin" not in rec:
        return
    t_idx, i_idx = _endings(g)
    margin = rec["margin"][i_idx]
    r0 = rec["rewards"][t_idx, i_idx, 0]
    bad = np.sign(margin) != np.sign(r0)
    if bad.any():
        k = int(np.argmax(bad))
        t, i = int(t_idx[k]), int(i_idx[k])
        _fail(g, "score-margin", f"the game ended after {t + 1} plies with rewards "
                                 f"{rec['rewards'][t, i].tolist()}, but score_margin gives player "
                                 f"0 a margin of {float(margin[k]):+g}",
              _moves(g, t + 1, i), i, t)


def _check_ownership(g: Games) -> None:
    rec = g.rec
    if "ownership" not in rec:
        return
    owners = np.asarray(rec["ownership"])
    cells = math.prod(g.env.observation_shape[:-1])
    t_idx, i_idx = _endings(g)
    if owners.dtype != np.int8 or owners.shape[1:] != (cells,):
        t, i = (int(t_idx[0]), int(i_idx[0])) if len(t_idx) else (g.max_plies, 0)
        _fail(g, "ownership", f"ownership returned {owners.dtype}{list(owners.shape[1:])} "
                              f"for a finished game, expected int8[{cells}] (a cell each)",
              _moves(g, t + 1, i), i, t)
    for t, i in zip(t_idx.tolist(), i_idx.tolist()):
        wrong = owners[i][~np.isin(owners[i], (-1, 0, 1))]
        if wrong.size:
            _fail(g, "ownership", f"ownership gave a cell the owner {int(wrong[0])}, not -1, "
                                  f"0 or 1", _moves(g, t + 1, i), i, t)


def _check_futile_moves(g: Games) -> None:
    rec = g.rec
    if "futile_all" not in rec:
        return
    if not rec["futile_type"].all():
        _fail(g, "futile-moves", f"futile_moves does not return bool "
                                 f"[{g.env.num_actions}] (one flag per action)", [], 0, 0)
    # The earlier of the two failures (on a tie, every move flagged).
    hits = [(hit, name) for name in ("futile_all", "futile_win") if name in rec
            and (hit := _first(rec[name]))]
    if not hits:
        return
    (t, i), name = min(hits)
    if name == "futile_all":
        _fail(g, "futile-moves", f"after {t} plies futile_moves flags every one of the "
                                 f"{rec['legal_count'][t, i]} legal moves",
              _moves(g, t, i), i, t)
    move = int(rec["futile_win_move"][t, i])
    _fail(g, "futile-moves", f"after {t} plies futile_moves flags {_move_text(g, move)}, the "
                             "only legal move that wins at once", _moves(g, t, i, [move]), i, t)


def check_pictures(g: Games) -> None:
    """`env.picture` draws the first state of game 0, one from the middle of it (with
    its last move) and its final state (with its last move); see RULES["picture"].

    Args:
      g: the recorded random games (`play_games`).

    Raises:
      EnvCheckError: ("picture") a picture is malformed or drawing raised.
    """
    structure = jax.tree.structure(jax.eval_shape(g.env.init, init_keys(0, 1)[0]))
    plies = int(g.rec["live"][:, 0].sum())
    cases = [(0, g.first_state)] + [(t, [x[t - 1] for x in g.trace])
                                    for t in sorted({max(1, plies // 2), plies}) if t > 0]
    for t, leaves in cases:
        state = jax.tree.unflatten(structure, leaves)
        last = int(g.rec["move"][t - 1, 0]) if t else None
        if problem := picture_problem(g.env, state, last):
            name = getattr(g.env, "name", type(g.env).__name__)
            _fail(g, "picture", f"{name}: after {t} plies, {problem}", _moves(g, t, 0), 0, t)


def check_replay(g: Games, keys: jax.Array) -> None:
    """Game 0 replayed alone (jit, unbatched, one step at a time) equals the batch.

    Args:
      g: the recorded random games (`play_games`).
      keys: (n,) PRNG keys, the games' `init` keys (`init_keys`).

    Raises:
      EnvCheckError: ("deterministic") a replayed state differs from the recorded one.
    """
    env = g.env
    state = jax.jit(env.init)(keys[0])
    diff = differing_leaves(g.names, g.first_state, host_leaves(state))
    if diff:
        _fail(g, "deterministic", f"jax.jit(env.init)(key) differs from the batched "
                                  f"jax.vmap(env.init) in {', '.join(diff)}", [], 0, 0)
    step = jax.jit(env.step)
    live = g.rec["live"][:, 0]
    for t in range(len(live)):
        state = step(state, g.rec["move"][t, 0])
        diff = differing_leaves(g.names, [x[t] for x in g.trace], host_leaves(state))
        if diff:
            _fail(g, "deterministic", f"ply {t + 1} stepped alone (jax.jit(env.step)) differs "
                                      f"from the same ply stepped in the batch (jit + vmap) in "
                                      f"{', '.join(diff)}", _moves(g, t + 1, 0), 0, t)
        if not live[t]:
            break
