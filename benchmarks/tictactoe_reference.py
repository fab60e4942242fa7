"""A hand-written AlphaZero loop for tic-tac-toe on pgx + mctx, as a timing reference.

It imports nothing from `azjax`: only jax, numpy, optax, flax (linen), mctx and pgx, plus
the exact judge `envs.tictactoe_minimax`. One jitted function runs a whole iteration
(256 parallel games for 9 plies of Gumbel MuZero search with 32 simulations, the replay
write, 256 Adam steps); after each iteration the network alone is judged on all 4,520 live
positions, and the loop stops at the first perfect iteration (every greedy move optimal,
no losing line from either seat) or after --max-seconds of training.

    python benchmarks/tictactoe_reference.py --seed S [--max-seconds T] [--steps 256]
        [--check-encoding]

The last stdout line is one JSON object: seed, perfect, iterations, games, train_s
(training and evaluation after compilation), compile_s, since_start_s, optimal_share.

`--quick`: one iteration of one Adam step, in seconds after compiling the whole program
(to check the script end to end; the figures mean nothing).
"""

import time

START = time.time()

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _quick
import flax.linen as nn
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import optax
import pgx

from envs import tictactoe_minimax as minimax

GAMES = 256  # parallel self-play games
PLIES = 9  # plies per iteration
SIMULATIONS = 32
CONSIDERED = 16
OPENING_MAX = 6  # a new game starts with U{0..6} uniformly random plies
RANDOM_MOVE = 0.05
SAMPLED_PLIES = 2  # plies of a game played from the search's action weights
RING = 8 * GAMES * PLIES  # replay: the last 8 iterations' positions
STEPS = 256  # Adam steps per iteration (with 64 it stalled short of perfect: 99.8%)
BATCH = 256
LR = 2e-3  # as azjax's recipe (both 1e-3 until 2026-11-24)
L2 = 1e-5
VALUE_MIX = 0.5  # value target = mix * z + (1 - mix) * search value

env = pgx.make("tic_tac_toe")


class Net(nn.Module):
    """A 3x128 ReLU MLP with a policy head (9 logits) and a tanh value head."""

    @nn.compact
    def __call__(self, obs):
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        for _ in range(3):
            x = nn.relu(nn.Dense(128)(x))
        return nn.Dense(9)(x), jnp.tanh(nn.Dense(1)(x))[:, 0]


net = Net()


def symmetries() -> np.ndarray:
    """The 8 board symmetries as cell permutations: new cell i takes old cell perm[i]."""
    grid = np.arange(9).reshape(3, 3)
    perms = [np.rot90(g, k).ravel() for g in (grid, grid.T) for k in range(4)]
    return np.stack(perms).astype(np.int32)


PERMS = jnp.asarray(symmetries())


class Replay(NamedTuple):
    """A ring of positions; a position is sampled only once its game's outcome is known."""

    obs: jax.Array  # [RING, 3, 3, 2] bool
    policy: jax.Array  # [RING, 9] search action weights
    value: jax.Array  # [RING] search root value, mover's view
    z: jax.Array  # [RING] game outcome, mover's view
    known: jax.Array  # [RING] bool: z is known


class State(NamedTuple):
    """Everything one iteration reads and writes."""

    params: dict
    opt_state: optax.OptState
    games: pgx.State  # the 256 games in progress
    opening: jax.Array  # [GAMES] their numbers of random opening plies
    replay: Replay
    pending_player: jax.Array  # [PLIES, GAMES] movers of the previous iteration's positions
    pending: jax.Array  # [PLIES, GAMES] bool: those positions still lack z
    iteration: jax.Array
    finished: jax.Array  # self-play games finished so far


optimizer = optax.adam(LR)


def new_games(key):
    """GAMES fresh games, each with its number of random opening plies, U{0..OPENING_MAX}."""
    init_key, count_key = jax.random.split(key)
    games = jax.vmap(env.init)(jax.random.split(init_key, GAMES))
    return games, jax.random.randint(count_key, (GAMES,), 0, OPENING_MAX + 1)


def recurrent_fn(params, key, action, state):
    """One search step: the pgx env moves; a terminal child is worth its reward."""
    del key
    mover = state.current_player
    state = jax.vmap(env.step)(state, action)
    logits, value = net.apply(params, state.observation)
    logits = jnp.where(state.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
    reward = jnp.take_along_axis(state.rewards, mover[:, None], axis=1)[:, 0]
    value = jnp.where(state.terminated, 0.0, value)
    discount = jnp.where(state.terminated, 0.0, -1.0)  # the next player is the opponent
    out = mctx.RecurrentFnOutput(reward=reward, discount=discount * jnp.ones_like(value),
                                 prior_logits=logits, value=value)
    return out, state


def search(params, key, state):
    """Gumbel MuZero search from every game's current position."""
    logits, value = net.apply(params, state.observation)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=state)
    return mctx.gumbel_muzero_policy(
        params, key, root, recurrent_fn, num_simulations=SIMULATIONS,
        invalid_actions=~state.legal_action_mask, max_num_considered_actions=CONSIDERED)


def selfplay_ply(params, games, opening, key):
    """One move in every game (searched in all; random in openings and at times); finished
    games restart. Returns the games, their opening lengths and the record of the ply."""
    search_key, sample_key, random_key, pick_key, reset_key = jax.random.split(key, 5)
    out = search(params, search_key, games)
    sampled = jax.random.categorical(sample_key, jnp.log(out.action_weights))
    action = jnp.where(games._step_count < SAMPLED_PLIES, sampled, out.action)
    uniform = jax.random.categorical(
        pick_key, jnp.where(games.legal_action_mask, 0.0, -jnp.inf))
    explore = ((games._step_count < opening)
               | (jax.random.uniform(random_key, (GAMES,)) < RANDOM_MOVE))
    action = jnp.where(explore, uniform, action)
    record = {"obs": games.observation, "policy": out.action_weights,
              "value": out.search_tree.summary().value, "player": games.current_player}
    stepped = jax.vmap(env.step)(games, action)
    record.update({"done": stepped.terminated, "rewards": stepped.rewards})
    fresh, fresh_opening = new_games(reset_key)
    done = stepped.terminated
    games = jax.tree.map(
        lambda a, b: jnp.where(done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), fresh, stepped)
    return games, jnp.where(done, fresh_opening, opening), record


def outcomes(done, rewards):
    """For each ply and game, the rewards of the first game end at or after that ply."""

    def back(carry, step):
        outcome, known = carry
        d, r = step
        outcome = jnp.where(d[:, None], r, outcome)
        known = known | d
        return (outcome, known), (outcome, known)

    start = (jnp.zeros((GAMES, 2)), jnp.zeros(GAMES, bool))
    _, (outcome, known) = jax.lax.scan(back, start, (done, rewards), reverse=True)
    return outcome, known  # [PLIES, GAMES, 2], [PLIES, GAMES]


def pick(outcome, player):
    """The outcome from `player`'s view."""
    return jnp.take_along_axis(outcome, player[..., None], axis=-1)[..., 0]


def write_replay(state: State, rec) -> Replay:
    """Store this iteration's positions and fill in z for the last iteration's open games."""
    replay = state.replay
    outcome, known = outcomes(rec["done"], rec["rewards"])
    z = pick(outcome, rec["player"])
    segment = state.iteration % 8
    # The previous iteration's unfinished games end at their lane's first end here.
    prev = ((segment + 7) % 8) * GAMES * PLIES
    fill = state.pending & known[0][None, :]
    prev_z = jnp.where(fill, pick(jnp.broadcast_to(outcome[0], (PLIES, GAMES, 2)), state.pending_player), 0.0).ravel()
    fill = fill.ravel()
    old_z = jax.lax.dynamic_slice(replay.z, (prev,), (GAMES * PLIES,))
    old_known = jax.lax.dynamic_slice(replay.known, (prev,), (GAMES * PLIES,))
    replay = replay._replace(
        z=jax.lax.dynamic_update_slice(replay.z, jnp.where(fill, prev_z, old_z), (prev,)),
        known=jax.lax.dynamic_update_slice(replay.known, old_known | fill, (prev,)))
    at = segment * GAMES * PLIES
    flat = {"obs": rec["obs"], "policy": rec["policy"], "value": rec["value"], "z": z,
            "known": known}
    return Replay(**{name: jax.lax.dynamic_update_slice(
        getattr(replay, name), flat[name].reshape((-1,) + flat[name].shape[2:]),
        (at,) + (0,) * (flat[name].ndim - 2)) for name in Replay._fields})


def loss_fn(params, obs, policy, target):
    """Value squared error + policy cross-entropy + L2."""
    logits, value = net.apply(params, obs)
    value_loss = jnp.mean((target - value) ** 2)
    policy_loss = -jnp.mean(jnp.sum(policy * jax.nn.log_softmax(logits), axis=-1))
    l2 = sum(jnp.sum(w ** 2) for w in jax.tree.leaves(params))
    return value_loss + policy_loss + L2 * l2


def sample_batch(replay: Replay, key):
    """A uniform batch of positions with known z, each under a random board symmetry."""
    index_key, sym_key = jax.random.split(key)
    weights = replay.known.astype(jnp.float32) + 1e-12
    index = jax.random.choice(index_key, RING, (BATCH,), p=weights / weights.sum())
    perm = PERMS[jax.random.randint(sym_key, (BATCH,), 0, 8)]  # [BATCH, 9]
    cells = replay.obs[index].reshape(BATCH, 9, 2)
    obs = jnp.take_along_axis(cells, perm[:, :, None], axis=1).reshape(BATCH, 3, 3, 2)
    policy = jnp.take_along_axis(replay.policy[index], perm, axis=1)
    target = VALUE_MIX * replay.z[index] + (1 - VALUE_MIX) * replay.value[index]
    return obs, policy, target


def learn(params, opt_state, replay: Replay, key, steps: int):
    """`steps` Adam steps on uniform batches from the replay."""

    def step(carry, step_key):
        params, opt_state = carry
        loss, grads = jax.value_and_grad(loss_fn)(params, *sample_batch(replay, step_key))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    (params, opt_state), losses = jax.lax.scan(
        step, (params, opt_state), jax.random.split(key, steps))
    return params, opt_state, losses.mean()


def iterate(state: State, key, steps: int = STEPS):
    """One iteration: PLIES plies of self-play, the replay write, `steps` learner steps."""
    play_key, learn_key = jax.random.split(key)

    def body(carry, ply_key):
        games, opening, rec = selfplay_ply(state.params, *carry, ply_key)
        return (games, opening), rec

    (games, opening), rec = jax.lax.scan(
        body, (state.games, state.opening), jax.random.split(play_key, PLIES))
    replay = write_replay(state, rec)
    params, opt_state, loss = learn(state.params, state.opt_state, replay, learn_key, steps)
    _, known = outcomes(rec["done"], rec["rewards"])
    new = State(params, opt_state, games, opening, replay, rec["player"], ~known,
                state.iteration + 1, state.finished + rec["done"].sum())
    return new, {"loss": loss, "sampleable": replay.known.sum()}


def initial_state(key) -> State:
    """Fresh network, optimizer, games and an empty replay."""
    net_key, game_key = jax.random.split(key)
    params = net.init(net_key, jnp.zeros((1, 3, 3, 2), bool))
    replay = Replay(jnp.zeros((RING, 3, 3, 2), bool), jnp.zeros((RING, 9)), jnp.zeros(RING),
                    jnp.zeros(RING), jnp.zeros(RING, bool))
    games, opening = new_games(game_key)
    return State(params, optimizer.init(params), games, opening, replay,
                 jnp.zeros((PLIES, GAMES), jnp.int32), jnp.zeros((PLIES, GAMES), bool),
                 jnp.int32(0), jnp.int32(0))


def observations(boards: np.ndarray) -> np.ndarray:
    """pgx observations [N, 3, 3, 2] of judge boards: plane 0 the mover's marks, 1 the other's."""
    mover = ((boards != minimax.EMPTY).sum(axis=1) % 2)[:, None]
    planes = np.stack([boards == mover, boards == 1 - mover], axis=-1)
    return planes.reshape(-1, 3, 3, 2)


def check_encoding(games: int = 5, seed: int = 0) -> None:
    """Assert that `observations` matches pgx's own on the positions of a few random games."""
    step, key = jax.jit(env.step), jax.random.PRNGKey(seed)
    for _ in range(games):
        key, init_key = jax.random.split(key)
        state = env.init(init_key)
        while not bool(state.terminated):
            board = np.asarray(state._x.board, np.int8)[None]
            assert (observations(board)[0] == np.asarray(state.observation)).all(), board
            key, move_key = jax.random.split(key)
            move = jax.random.choice(move_key, 9, p=state.legal_action_mask / 1.0)
            state = step(state, move)
    print(f"observation encoding matches pgx on {games} random games")


class Judge:
    """The exact judge over the 4,520 live positions."""

    def __init__(self):
        solution = minimax.solution()
        live = solution.live
        self.boards = solution.boards[live]
        self.optimal = solution.optimal[live]
        self.obs = jnp.asarray(observations(self.boards))
        self.legal = jnp.asarray(self.boards == minimax.EMPTY)

    def __call__(self, actions: np.ndarray) -> tuple[float, bool]:
        """Optimal-move share of the greedy actions, and whether the play is perfect."""
        share = float(self.optimal[np.arange(len(actions)), actions].mean())
        if share < 1.0:
            return share, False
        choose = minimax.table_player(self.boards, actions)
        return share, not minimax.losing_lines(choose, 0) and not minimax.losing_lines(choose, 1)


def greedy(params, obs, legal):
    """The network's legal argmax in every position."""
    logits, _ = net.apply(params, obs)
    return jnp.argmax(jnp.where(legal, logits, -jnp.inf), axis=-1)


def main() -> int:
    """Train until perfect or out of time; print one JSON line last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="training time limit (after compilation; one iteration at least)")
    parser.add_argument("--steps", type=int, default=STEPS, help="Adam steps per iteration")
    parser.add_argument("--check-encoding", action="store_true",
                        help="first assert the judge's observations match pgx's")
    args = _quick.parse(parser, max_seconds=0.0, steps=1)
    if args.check_encoding:
        check_encoding()

    judge = Judge()
    key, init_key = jax.random.split(jax.random.PRNGKey(args.seed))
    state = initial_state(init_key)
    compile_start = time.perf_counter()
    step = jax.jit(functools.partial(iterate, steps=args.steps), donate_argnums=0).lower(state, key).compile()
    act = jax.jit(greedy).lower(state.params, judge.obs, judge.legal).compile()
    compile_s = time.perf_counter() - compile_start

    train_start = time.perf_counter()
    perfect, share, iteration = False, 0.0, 0
    while not perfect and (iteration == 0
                           or time.perf_counter() - train_start < args.max_seconds):
        key, iter_key = jax.random.split(key)
        state, metrics = step(state, iter_key)
        share, perfect = judge(np.asarray(act(state.params, judge.obs, judge.legal)))
        iteration += 1
        print(f"it {iteration:3d} | games {int(state.finished):6d} | loss "
              f"{float(metrics['loss']):.3f} | sampleable {int(metrics['sampleable']):5d} | "
              f"optimal {100 * share:6.2f}% | {time.perf_counter() - train_start:5.1f} s",
              flush=True)
    train_s = time.perf_counter() - train_start
    print(json.dumps({
        "seed": args.seed, "perfect": perfect, "iterations": iteration,
        "games": int(state.finished), "train_s": round(train_s, 3),
        "compile_s": round(compile_s, 3), "since_start_s": round(time.time() - START, 3),
        "optimal_share": share,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
