"""The players and evaluator of one training program, made once per program: what the
driver evaluates, gates and plays baselines with, bound to each experiment's parameters."""

from __future__ import annotations

from collections.abc import Sequence

from azjax.core.networks import make_network
from azjax.core.players import AgentParams, Player, network_player, search_player
from azjax.core.program import ProgramConfig
from azjax.core.search import changed, search_changes
from azjax.evaluation.evaluators import make_evaluator
from azjax.evaluation.player_specs import make_player
from azjax.run.grammar.specs import RUN_KINDS, parse_spec
from envs import Env


class ProgramPlayers:
    """The players and evaluator of one program, compiled once and bound to each
    experiment's parameters (cached by program: a later run of the same program in this
    process reuses the compilations)."""

    def __init__(self, env: Env, program: ProgramConfig):
        self.env = env
        self.evaluator = make_evaluator(env)
        self.apply = make_network(env, program.network, gradients=False).apply
        self.search = program.search
        self.network = network_player(self.apply)
        self._searchers: dict[tuple[int, tuple[str, ...]], Player] = {}
        self._opponents: dict[str, Player] = {}

    def searcher(self, simulations: int, changes: Sequence[str] = ()) -> Player:
        """The search player at `simulations` per move (0: the training budget), its
        search changed by the NAME=VALUE settings `changes` (`search_changes`)."""
        key = simulations, tuple(changes)
        if key not in self._searchers:
            search = changed(self.search, search_changes(changes))
            if simulations:
                search = changed(search, {"num_simulations": simulations})
            self._searchers[key] = search_player(self.env, self.apply, None, search)
        return self._searchers[key]

    def scored(self, simulations: int, changes: Sequence[str], bound: AgentParams) -> Player:
        """`searcher(simulations, changes)` bound to an experiment's `bound` parameters,
        whose traced search settings take `changes` too (a bound player searches with its
        parameters' traced settings, not its template's)."""
        parsed = search_changes(changes)
        return self.searcher(simulations, changes).with_params(
            bound._replace(search=changed(bound.search, parsed)))

    def opponents(self, specs: Sequence[str]) -> list[Player]:
        """The baseline players named by `specs`, made once each (a player loaded from a
        run directory is made anew by each `train_group` call: the run may have moved)."""
        for spec in specs:
            if spec not in self._opponents:
                self._opponents[spec] = make_player(spec, self.env)
        return [self._opponents[spec] for spec in specs]

    def forget_loaded(self) -> None:
        """Drops the players loaded from run directories."""
        for spec in [s for s in self._opponents if parse_spec(s).kind in RUN_KINDS]:
            del self._opponents[spec]
