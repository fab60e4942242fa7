"""Does a game keep the protocol of `envs.core`? The conformance checker: `check_env(env)`
plays random games and checks, for every step, the rules that every game must follow
(see `RULES`).

    import envs
    report = envs.check_env(envs.make("tictactoe"))   # raises envs.EnvCheckError
    print(report)

From the shell: `python -m envs.check GAME` (`envs/check.py`).

Modules, in the order they build on each other:

* `rules`: the rules checked (`RULES`, `PROPERTIES`) and the error (`EnvCheckError`).
* `static`: the checks that need no game played, and the helpers the games share.
* `pictures`: what is wrong with a game's `env.picture` of one state.
* `endings`: the kinds of ending the random games reach, told apart without the game.
* `policies`: how the random games choose their moves.
* `games`: the random games, one jitted scan that flags each broken rule.
* `verdicts`: the first rule the games break, shown by the shortest game that breaks it.
* `reference`: the games replayed in an independent implementation of the rules.
* `checker`: `check_env` itself and its `CheckReport`.
"""

from envs.conformance.checker import (
    ONLY_A_REFERENCE,
    PROPERTIES,
    RULES,
    CheckReport,
    EnvCheckError,
    check_env,
    init_keys,
)

__all__ = ["ONLY_A_REFERENCE", "PROPERTIES", "RULES", "CheckReport", "EnvCheckError", "check_env",
           "init_keys"]
