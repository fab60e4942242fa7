"""Minimax and alpha-beta search on the host, with the JAX games for the rules.

A baseline opponent (the player kind `alphabeta:D[,eval=lines|zero]`): depth-limited
negamax with alpha-beta pruning, recursing in Python. Each expanded node costs one jitted
call that steps every action at once and returns the children with their results and
heuristic values; the recursion works on host (numpy) copies of the child states.

Conventions (shared by `minimax`, `alphabeta` and `alphabeta_player`):

* Values are from the point of view of the player to move at the root.
* A finished game reached `p` plies below the root scores `reward * (1 - WIN_DECAY * p)`
  (`reward` +1/-1/0 for the player who moved into it), so a win now beats a win later
  and a loss later beats a loss now.
* A live position at the depth limit scores `eval_fn(observation)` from its mover's
  point of view (negated for the player who moved into it); evaluation functions stay in
  (-0.5, 0.5) so that decided results always dominate them.
* `nodes` counts the positions searched: the root plus every child whose value was
  taken (a finished game, a depth-limit leaf or an interior node).

An evaluation function is a JAX function of ONE observation ([H, W, C], channel 0 the
mover's stones, channel 1 the opponent's) returning a float scalar for the mover.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax.core.identity import cache_by_identity
from azjax.core.players import Player
from azjax.run.grammar.specs import PlayerKind, PlayerSpec, choice, number, register_player
from envs import Env, State, lines

EvalFn = Callable[[chex.Array], chex.Array]

WIN_DECAY = 0.01
# Root moves within TIE_TOL of the best value count as equally good (float32 heuristics
# of mirror-image positions can differ in the last bit).
TIE_TOL = 1e-6


class SearchResult(NamedTuple):
    """Outcome of a root search.

    Attributes:
      value: value of the root for the player to move.
      best_actions: root actions attaining `value` (see each search for which of them).
      nodes: positions searched (root included).
    """

    value: float
    best_actions: tuple[int, ...]
    nodes: int


# --------------------------------------------------------------------------------------
# Evaluation functions
# --------------------------------------------------------------------------------------


def zero_eval(observation: chex.Array) -> chex.Array:
    """0 for every live leaf: the search sees only finished games."""
    del observation
    return jnp.zeros((), jnp.float32)


def line_count_eval(env: Env) -> EvalFn:
    """The open-line heuristic (`envs.lines.line_count_eval`) of a k-in-a-row game, for
    a game that states its `line_length` (ValueError for any other)."""
    if env.line_length is None:
        raise ValueError(
            f"no line-count heuristic for game {env.name!r}: it states no line_length "
            "(use zero_eval, the game's own heuristic or your own eval_fn)"
        )
    height, width = env.observation_shape[:2]
    return lines.line_count_eval(height, width, env.line_length)


def default_eval(env: Env) -> EvalFn:
    """The game's own heuristic (`Env.heuristic`), else `zero_eval`."""
    return env.heuristic() or zero_eval


# --------------------------------------------------------------------------------------
# Search
# --------------------------------------------------------------------------------------


@cache_by_identity(maxsize=64)
def _expander(env: Env, eval_fn: EvalFn) -> Callable:
    """Jitted `state -> (children [A], reward for the mover [A], heuristic [A])`."""
    actions = jnp.arange(env.num_actions, dtype=jnp.int32)

    def expand(state: State):
        children = jax.vmap(env.step, in_axes=(None, 0))(state, actions)
        reward = children.rewards[:, state.current_player]
        heuristic = jax.vmap(eval_fn)(children.observation).astype(jnp.float32)
        return children, reward, heuristic

    return jax.jit(expand)


class _Node(NamedTuple):
    """An expanded position on the host."""

    order: np.ndarray  # legal actions, most promising first for the player to move
    children: State  # host states [A]
    terminated: np.ndarray  # bool [A]
    static: np.ndarray  # float [A]: each child's value as a leaf, for the player to move

    def child(self, action: int) -> State:
        return jax.tree.map(lambda x: x[action], self.children)


def _take(states: State, index: int) -> State:
    return jax.tree.map(lambda x: x[index], states)


class _Search:
    """One search's expansion function and node counter."""

    def __init__(self, env: Env, eval_fn: EvalFn):
        self._expand = _expander(env, eval_fn)
        self.nodes = 1  # the root

    def expand(self, state: State, ply: int) -> _Node:
        children, reward, heuristic = jax.device_get(self._expand(state))
        decided = reward * (1.0 - WIN_DECAY * (ply + 1))
        static = np.where(children.terminated, decided, -heuristic).astype(np.float64)
        legal = np.flatnonzero(state.legal_action_mask)
        # Stable sort: equal estimates keep action order, so the search is deterministic.
        order = legal[np.argsort(-static[legal], kind="stable")]
        return _Node(order, children, children.terminated, static)

    def leaf_value(self, node: _Node, action: int, depth: int) -> float | None:
        """The child's value if it is a leaf (finished, or at the depth limit), else None."""
        self.nodes += 1
        if node.terminated[action] or depth == 1:
            return float(node.static[action])
        return None

    def minimax(self, state: State, depth: int, ply: int) -> float:
        node = self.expand(state, ply)
        best = -np.inf
        for action in node.order:
            value = self.leaf_value(node, action, depth)
            if value is None:
                value = -self.minimax(node.child(action), depth - 1, ply + 1)
            best = max(best, value)
        return best

    def alphabeta(self, state: State, depth: int, alpha: float, beta: float, ply: int) -> float:
        """Fail-soft: exact inside (alpha, beta), else a bound on the side it fell."""
        node = self.expand(state, ply)
        best = -np.inf
        for action in node.order:
            value = self.leaf_value(node, action, depth)
            if value is None:
                value = -self.alphabeta(node.child(action), depth - 1, -beta, -alpha, ply + 1)
            best = max(best, value)
            alpha = max(alpha, value)
            if alpha >= beta:
                break
        return best


def _check_depth(depth: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"search depth must be an integer >= 1, got {depth!r}")


def _root(state: State) -> State:
    """A host copy of one live, unbatched state."""
    state = jax.device_get(state)
    if np.ndim(state.terminated) != 0:
        raise ValueError("search takes one unbatched state")
    if state.terminated:
        raise ValueError("cannot search a finished game")
    return state


def minimax(env: Env, state: State, depth: int, eval_fn: EvalFn = zero_eval) -> SearchResult:
    """Plain depth-limited negamax (no pruning), the reference for `alphabeta`.

    `best_actions` holds every root action within TIE_TOL of the best value, in
    action order.
    """
    _check_depth(depth)
    search = _Search(env, eval_fn)
    node = search.expand(_root(state), 0)
    values = {}
    for action in node.order:
        value = search.leaf_value(node, action, depth)
        if value is None:
            value = -search.minimax(node.child(action), depth - 1, 1)
        values[int(action)] = value
    best = max(values.values())
    ties = tuple(sorted(a for a, v in values.items() if v > best - TIE_TOL))
    return SearchResult(best, ties, search.nodes)


def alphabeta(
    env: Env,
    state: State,
    depth: int,
    eval_fn: EvalFn = zero_eval,
    all_best: bool = False,
) -> SearchResult:
    """Depth-limited negamax with alpha-beta pruning and heuristic move ordering.

    The value equals `minimax`'s. With `all_best=False`, `best_actions` is only the
    first best root action in search order. With `all_best=True`, each root child is
    searched with the lower bound `best - TIE_TOL` instead of `best`, so every child
    within TIE_TOL of the best gets an exact value and `best_actions` is the same set
    as `minimax`'s (at the cost of a little less pruning at the root).
    """
    _check_depth(depth)
    search = _Search(env, eval_fn)
    node = search.expand(_root(state), 0)
    slack = TIE_TOL if all_best else 0.0
    best = -np.inf
    values = {}
    for action in node.order:
        value = search.leaf_value(node, action, depth)
        if value is None:
            alpha = best - slack
            value = -search.alphabeta(node.child(action), depth - 1, -np.inf, -alpha, 1)
        values[int(action)] = value
        best = max(best, value)
    if all_best:
        ties = tuple(sorted(a for a, v in values.items() if v > best - TIE_TOL))
    else:
        ties = (next(a for a, v in values.items() if v == best),)
    return SearchResult(best, ties, search.nodes)


def alphabeta_player(
    env: Env, depth: int, eval_fn: EvalFn | None = None, name: str | None = None
) -> Player:
    """A host-side `Player` that plays an alpha-beta best move at `depth` plies.

    `eval_fn` defaults to `default_eval(env)`. Equally good root moves (all of them,
    via `alphabeta(..., all_best=True)`) are chosen between at random with the key, so
    the player does not replay one game. Finished games get action 0.

    Raises:
      ValueError: if depth is not an integer >= 1.
    """
    _check_depth(depth)
    eval_fn = default_eval(env) if eval_fn is None else eval_fn

    def policy(params, states: State, key: chex.PRNGKey) -> np.ndarray:
        del params
        states = jax.device_get(states)
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
        actions = np.zeros(np.shape(states.terminated), np.int32)
        for b in np.flatnonzero(~np.asarray(states.terminated)):
            result = alphabeta(env, _take(states, b), depth, eval_fn, all_best=True)
            actions[b] = rng.choice(result.best_actions)
        return actions

    return Player(name=name or f"alphabeta:{depth}", policy=policy, jittable=False)


def _from_spec(spec: PlayerSpec, env: Env, name: str) -> Player:
    make_eval = spec.values.get("eval")  # none: the game's default
    eval_fn = None if make_eval is None else make_eval(env)
    return alphabeta_player(env, spec.value, eval_fn=eval_fn, name=name)


register_player(PlayerKind(
    "alphabeta", "alphabeta:D[,eval=lines|zero]",
    "minimax with alpha-beta pruning to depth D (host)", _from_spec,
    arg=number("the depth", int),
    options={"eval": choice("eval", {"lines": line_count_eval, "zero": lambda env: zero_eval},
                            said="'lines' or 'zero'")}))
