"""Search that keeps its tree between moves, PUCT and Gumbel, over mctx.

After a move, the subtree of the searched tree under the position now to move becomes the
next search's tree, so the simulations spent on the line that was played count again.
mctx has no hook for it; this module is the smallest layer over mctx's public pieces:

* the tree is an `mctx.Tree` of fixed capacity, N = `reuse_capacity` x `num_simulations`
  + 1 nodes (`KeptTree`), so every search has static shapes;
* the search is mctx's own policy (`mctx.muzero_policy`, `mctx.gumbel_muzero_policy`,
  through `azjax.core.search.make_search_fn`), given a `loop_fn` that runs mctx's
  simulation loop on the kept tree instead of the fresh root mctx allocated. mctx numbers
  the node expanded by simulation `i` as `i + 1`, so the loop starts at the first free
  node. Given no tree to reuse, the loop is mctx's own loop and the output is mctx's, bit
  for bit (`tests/test_tree_reuse.py` holds this).

The rules (docs/tree_reuse.md gives the reasons):

* **Finding the root.** The kept tree is searched for a node whose state equals the
  position to search, field by field; the subtree under the first such node is kept,
  compacted to the front of the arrays in creation order and cut to N - `num_simulations`
  nodes. A node is created after its parent, so the first K nodes in creation order are a
  subtree; where nodes are cut, the visits and values of the nodes kept are recounted from
  the children they keep. No such node: the search starts from a fresh root.
* **Never a finished game's or an old network's values.** A kept tree carries a
  fingerprint of the parameters that grew it and is ignored under any other parameters;
  a finished game has no position to search, and a new game's start is in no kept tree.
* **The root's own search.** Each search runs its own `num_simulations` new simulations
  and draws its own root noise (Dirichlet for PUCT; Gumbel draws for Gumbel). The root
  starts afresh over the kept children: its visit counts are zeroed and its value reset
  to the network's. So Gumbel's Sequential Halving runs over the search's own
  simulations, and the move chosen and the improved-policy target softmax(logits +
  sigma(completed Q)) count only its own visits (sigma's scale included), while a child it
  visits brings its whole kept subtree's value to its Q. PUCT may instead keep the root's
  inherited visits (`SearchConfig.reuse_root_visits`), in its visit target, its choice
  and its exploration term, as Leela Zero does.
"""

from __future__ import annotations

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax.core.game_hooks import ApplyFn
from azjax.core.search import SearchConfig, make_search_fn
from envs import Env, State
from envs.state import tree_where


@struct.dataclass
class KeptTree:
    """The trees of B searches, kept for the next move.

    Attributes:
      tree: an `mctx.Tree` of batch (B,) and `capacity` nodes.
      nodes: (B,) int32: the nodes in use are below this index (0: no tree).
      fingerprint: (B,) float32: `params_fingerprint` of the parameters that grew it.
    """

    tree: mctx.Tree
    nodes: chex.Array
    fingerprint: chex.Array


@struct.dataclass
class ReusingSearch:
    """What a reusing search returns.

    Attributes:
      output: the `mctx.PolicyOutput` of the search (its `search_tree` has `capacity`
        nodes).
      kept: the tree to pass to the next search.
      inherited: (B,) int32: the visits the root brought from the kept tree (0 where the
        search started afresh).
      simulations: the search's own simulations (`num_simulations`).
    """

    output: mctx.PolicyOutput
    kept: KeptTree
    inherited: chex.Array
    simulations: int = struct.field(pytree_node=False, default=0)

    @property
    def share(self) -> chex.Array:
        """(B,) float32: the share of the root's visits the kept subtree carried,
        inherited / (inherited + simulations)."""
        inherited = self.inherited.astype(jnp.float32)
        return inherited / (inherited + self.simulations)


def tree_capacity(config: SearchConfig) -> int:
    """Nodes of a kept tree: `reuse_capacity` x `num_simulations` + 1."""
    return dataclasses.replace(config, reuse_tree=True).tree_nodes


def params_fingerprint(params: chex.ArrayTree) -> chex.Array:
    """A number that tells parameters apart: a fixed pseudo-random projection of every
    leaf, summed. Equal parameters give the same number; any change almost surely
    another.

    Args:
      params: a pytree of arrays (the network's parameters).

    Returns:
      () float32.
    """
    total = jnp.float32(0.0)
    for index, leaf in enumerate(jax.tree.leaves(params)):
        flat = jnp.ravel(leaf).astype(jnp.float32)
        weights = jnp.cos(jnp.arange(flat.size, dtype=jnp.float32) * (0.7548 + index))
        total = total + jnp.dot(flat, weights)
    return total


def _empty_like_tree(tree: mctx.Tree, nodes: int) -> mctx.Tree:
    """`tree` (batched) grown or cut to `nodes` nodes; new nodes empty as mctx makes
    them (no parent, unexpanded children, zero statistics)."""

    def fit(x: chex.Array, fill) -> chex.Array:
        have = x.shape[1]
        if have >= nodes:
            return x[:, :nodes]
        pad = [(0, 0), (0, nodes - have)] + [(0, 0)] * (x.ndim - 2)
        return jnp.pad(x, pad, constant_values=jnp.asarray(fill, x.dtype))

    unvisited, no_parent = mctx.Tree.UNVISITED, mctx.Tree.NO_PARENT
    return tree.replace(
        node_visits=fit(tree.node_visits, 0),
        raw_values=fit(tree.raw_values, 0),
        node_values=fit(tree.node_values, 0),
        parents=fit(tree.parents, no_parent),
        action_from_parent=fit(tree.action_from_parent, no_parent),
        children_index=fit(tree.children_index, unvisited),
        children_prior_logits=fit(tree.children_prior_logits, 0),
        children_visits=fit(tree.children_visits, 0),
        children_rewards=fit(tree.children_rewards, 0),
        children_discounts=fit(tree.children_discounts, 0),
        children_values=fit(tree.children_values, 0),
        embeddings=jax.tree.map(lambda x: fit(x, 0), tree.embeddings),
    )


def _same_states(embeddings: State, state: State) -> chex.Array:
    """(N,) bool: which of N node states equal `state` in every field."""

    def equal(nodes: chex.Array, one: chex.Array) -> chex.Array:
        if jax.dtypes.issubdtype(nodes.dtype, jax.dtypes.prng_key):
            nodes, one = jax.random.key_data(nodes), jax.random.key_data(one)
        return jnp.all((nodes == one).reshape(nodes.shape[0], -1), axis=1)

    leaves = jax.tree.leaves(jax.tree.map(equal, embeddings, state))
    return jnp.stack(leaves).all(axis=0)


def _recount(tree: mctx.Tree, nodes: chex.Array) -> mctx.Tree:
    """An unbatched tree's visits and values recounted from the leaves up.

    mctx keeps, at every node, visits = 1 + the visits of its edges and value x visits =
    raw value + the sum over edges of visits x (reward + discount x the child's value).
    Nodes are recounted from the last to the first (a child always after its parent),
    each writing its new totals into its parent's edge.
    """
    size = tree.node_visits.shape[0]

    def recount(step, tree):
        node = size - 1 - step
        live = node < nodes
        visits = tree.children_visits[node]
        count = 1 + jnp.sum(visits)
        q = (tree.children_rewards[node]
             + tree.children_discounts[node] * tree.children_values[node])
        value = (tree.raw_values[node] + jnp.sum(visits * q)) / count
        count = jnp.where(live, count, tree.node_visits[node])
        value = jnp.where(live, value, tree.node_values[node])
        parent = jnp.maximum(tree.parents[node], 0)
        action = jnp.maximum(tree.action_from_parent[node], 0)
        edge = live & (tree.parents[node] >= 0)
        return tree.replace(
            node_visits=tree.node_visits.at[node].set(count),
            node_values=tree.node_values.at[node].set(value),
            children_visits=tree.children_visits.at[parent, action].set(
                jnp.where(edge, count, tree.children_visits[parent, action])),
            children_values=tree.children_values.at[parent, action].set(
                jnp.where(edge, value, tree.children_values[parent, action])),
        )

    return jax.lax.fori_loop(0, size, recount, tree)


def _subtree(tree: mctx.Tree, nodes: chex.Array, matches: chex.Array, state: State,
             budget: int) -> tuple[mctx.Tree, chex.Array]:
    """The subtree of an unbatched tree under the first node whose state is `state`.

    Args:
      tree: one tree (no batch axis) of N nodes.
      nodes: () int32: the nodes in use are below it.
      matches: () bool: False ignores the tree (another network grew it).
      state: the position to search.
      budget: the most nodes kept.

    Returns:
      (the subtree compacted to the front, in creation order, at most `budget` nodes and
      statistics recounted where nodes were cut; its node count, 0 where none was found).
    """
    size = tree.node_visits.shape[0]
    index = jnp.arange(size, dtype=jnp.int32)
    used = (index < nodes) & (tree.node_visits > 0)
    candidates = used & _same_states(tree.embeddings, state) & matches
    found = jnp.any(candidates)
    top = jnp.argmax(candidates).astype(jnp.int32)
    # Membership by pointer doubling: after k rounds a node knows its 2^k ancestors.
    ancestor = jnp.where(tree.parents >= 0, tree.parents, index)
    member = found & (index == top)
    for _ in range(math.ceil(math.log2(size)) + 1):
        member = member | member[ancestor]
        ancestor = ancestor[ancestor]
    member = member & used
    rank = jnp.cumsum(member) - 1
    keep = member & (rank < budget)
    count = jnp.sum(keep).astype(jnp.int32)
    new_of_old = jnp.where(keep, rank, -1).astype(jnp.int32)
    old_of_new = jnp.zeros(size, jnp.int32).at[jnp.where(keep, rank, size)].set(
        index, mode="drop")
    slot = index < count

    def renumber(old: chex.Array) -> chex.Array:
        return jnp.where(old >= 0, new_of_old[jnp.maximum(old, 0)], -1)

    def gather(x: chex.Array, fill) -> chex.Array:
        rows = x[old_of_new]
        return jnp.where(slot.reshape((size,) + (1,) * (rows.ndim - 1)), rows,
                         jnp.asarray(fill, rows.dtype))

    children = jnp.where(slot[:, None], renumber(tree.children_index[old_of_new]),
                         mctx.Tree.UNVISITED)
    expanded = children >= 0
    edge = lambda x: jnp.where(expanded, x[old_of_new], jnp.zeros((), x.dtype))
    parents = jnp.where(slot & (index > 0), renumber(tree.parents[old_of_new]),
                        mctx.Tree.NO_PARENT)
    kept = tree.replace(
        node_visits=gather(tree.node_visits, 0),
        raw_values=gather(tree.raw_values, 0),
        node_values=gather(tree.node_values, 0),
        parents=parents,
        action_from_parent=jnp.where(parents >= 0, tree.action_from_parent[old_of_new],
                                     mctx.Tree.NO_PARENT),
        children_index=children,
        children_prior_logits=gather(tree.children_prior_logits, 0),
        children_visits=edge(tree.children_visits),
        children_rewards=edge(tree.children_rewards),
        children_discounts=edge(tree.children_discounts),
        children_values=edge(tree.children_values),
        embeddings=jax.tree.map(lambda x: gather(x, 0), tree.embeddings),
    )
    cut = jnp.sum(member) > count
    recounted = _recount(kept, count)
    kept = jax.tree.map(lambda a, b: jnp.where(cut, a, b), recounted, kept)
    return kept, count


def kept_root(kept: KeptTree, states: State, fingerprint: chex.Array, budget: int
              ) -> tuple[KeptTree, chex.Array]:
    """Each search's kept subtree under its position, ready to be searched again.

    Args:
      kept: the trees of B earlier searches.
      states: the B positions to search now.
      fingerprint: () float32: `params_fingerprint` of the parameters searching now.
      budget: the most nodes kept per tree.

    Returns:
      (the subtrees, their `nodes` counting the nodes kept, 0 where the position is not
      in the tree; the visits of each subtree's root beyond its own expansion, (B,)).
    """
    matches = kept.fingerprint == fingerprint
    trees, nodes = jax.vmap(_subtree, in_axes=(0, 0, 0, 0, None))(
        kept.tree, kept.nodes, matches, states, budget)
    inherited = jnp.where(nodes > 0, trees.node_visits[:, 0] - 1, 0)
    return kept.replace(tree=trees, nodes=nodes), inherited


def _graft(kept: KeptTree, fresh: mctx.Tree, reuse_root_visits: bool) -> mctx.Tree:
    """The tree a reusing search runs on: each kept subtree (or, without one, mctx's
    fresh root) with the fresh root's noisy prior, invalid actions and extra data, and,
    unless `reuse_root_visits`, its fresh visits and value."""
    size = kept.tree.node_visits.shape[1]
    padded = _empty_like_tree(fresh, size)
    has = kept.nodes > 0
    tree = jax.vmap(tree_where)(has, kept.tree, padded)
    root = mctx.Tree.ROOT_INDEX
    tree = tree.replace(
        children_prior_logits=tree.children_prior_logits.at[:, root].set(
            fresh.children_prior_logits[:, root]),
        root_invalid_actions=fresh.root_invalid_actions,
        extra_data=fresh.extra_data,
    )
    if not reuse_root_visits:
        tree = tree.replace(
            node_visits=tree.node_visits.at[:, root].set(fresh.node_visits[:, root]),
            node_values=tree.node_values.at[:, root].set(fresh.node_values[:, root]),
            raw_values=tree.raw_values.at[:, root].set(fresh.raw_values[:, root]),
            children_visits=tree.children_visits.at[:, root].set(
                fresh.children_visits[:, root]),
            children_values=tree.children_values.at[:, root].set(
                fresh.children_values[:, root]),
        )
    return tree


def empty_kept(env: Env, apply_fn: ApplyFn, config: SearchConfig, params: chex.ArrayTree,
               states: State) -> KeptTree:
    """B trees with nothing in them, shaped as the reusing search of `config` keeps them.

    Args:
      env: the game.
      apply_fn: the network.
      config: the search's settings.
      params: the network's parameters (only their shapes matter).
      states: a batch (B,) of states (only their shapes matter).

    Returns:
      A `KeptTree` of batch (B,) with `nodes` 0.
    """
    search_fn = make_search_fn(env, apply_fn, config)
    shapes = jax.eval_shape(
        lambda p, s: search_fn(p, config.as_arrays(), jax.random.key(0), s).search_tree,
        params, states)
    tree = _empty_like_tree(jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes),
                            tree_capacity(config))
    tree = tree.replace(node_visits=jnp.zeros_like(tree.node_visits))
    batch = tree.node_visits.shape[0]
    return KeptTree(tree, jnp.zeros(batch, jnp.int32), jnp.zeros(batch, jnp.float32))


def make_reusing_search_fn(env: Env, apply_fn: ApplyFn, config: SearchConfig):
    """The search of `config` over `env`'s games, keeping its tree between moves.

    Args:
      env: the game.
      apply_fn: `apply_fn(params, obs (B, *observation_shape)) -> (logits (B, A),
        value (B,))`, the network.
      config: the search's settings (`reuse_capacity` sizes the tree;
        `reuse_root_visits`, PUCT only, keeps the root's inherited visits).

    Returns:
      `search(params, search, key, states, kept) -> ReusingSearch`: as
      `make_search_fn`'s search (params, traced settings, a key it consumes, B live
      states), given the `KeptTree` of the previous move (`empty_kept` for none).
    """
    search_fn = make_search_fn(env, apply_fn, config)
    capacity = tree_capacity(config)
    budget = capacity - config.num_simulations
    keep_root_visits = config.reuse_root_visits and config.policy == "puct"

    def search(params, settings: SearchConfig, key: chex.PRNGKey, states: State,
               kept: KeptTree) -> ReusingSearch:
        chex.assert_rank(states.legal_action_mask, 2)
        chex.assert_shape(kept.nodes, states.legal_action_mask.shape[:1])
        fingerprint = params_fingerprint(params)
        roots, inherited = kept_root(kept, states, fingerprint, budget)
        # mctx's simulation i expands node i + 1: start where every tree has room.
        first_free = jnp.max(jnp.maximum(roots.nodes, 1))

        def loop_fn(lower, upper, body, init):
            rng_key, fresh = init
            tree = _graft(roots, fresh, keep_root_visits)
            start = first_free - 1
            return jax.lax.fori_loop(start, start + (upper - lower), body, (rng_key, tree))

        output = search_fn(params, settings, key, states, loop_fn=loop_fn,
                           max_depth=capacity)
        nodes = jnp.full_like(kept.nodes, first_free + config.num_simulations)
        grown = KeptTree(output.search_tree, nodes, jnp.full_like(kept.fingerprint,
                                                                  fingerprint))
        return ReusingSearch(output, grown, inherited, config.num_simulations)

    return search
