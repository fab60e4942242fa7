"""The game options of a command line, in every spelling: `--game-options KEY=VALUE ...`,
`--game-options KEY VALUE ...`, `--game-options=KEY=VALUE` and `--game-options.KEY VALUE`."""

from __future__ import annotations

GAME_OPTIONS_FLAG = "--game-options"
GAME_OPTIONS_HELP = ("game options as KEY=VALUE (one or more after the flag), e.g. "
                     "--game-options size=9 komi=7.5")


def option_value(key: str, text: str, words: bool = False,
                 where: str = GAME_OPTIONS_FLAG) -> int | float | str:
    """A game option's value: an int, else a float, else (with `words`, for the commands
    that only build the game) the word itself; ValueError in one line otherwise."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if words and text:
        return text
    raise ValueError(f"{where} {key}={text}: the value must be a number")


def game_options(tokens: list[str], words: bool = False) -> dict[str, int | float | str]:
    """`KEY=VALUE ...` tokens (or the older `KEY VALUE ...` pairs) as a dict of options."""
    options: dict[str, int | float | str] = {}
    pending: str | None = None
    for token in tokens:
        if pending is not None:
            options[pending], pending = option_value(pending, token, words), None
            continue
        key, eq, value = token.partition("=")
        if not key or not key.isidentifier():
            raise ValueError(f"--game-options takes KEY=VALUE, got {token!r}")
        if eq:
            options[key] = option_value(key, value, words)
        else:
            pending = key
    if pending is not None:
        raise ValueError(f"--game-options takes KEY=VALUE, got {pending!r} with no value")
    return options


def split_game_options(argv: list[str], words: bool = False,
                       flags: tuple[str, ...] = (GAME_OPTIONS_FLAG,)
                       ) -> tuple[list[str], dict[str, int | float | str]]:
    """Takes every spelling of the game options out of a command line: `--game-options
    KEY=VALUE ...` (the tokens up to the next `--` option), `--game-options KEY VALUE
    ...`, `--game-options=KEY=VALUE`, `--game-options.KEY VALUE` and
    `--game-options.KEY=VALUE` (and the same after each of `flags`). Returns the rest
    of the command line and the options, later ones winning."""
    rest: list[str] = []
    options: dict[str, int | float | str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag = next((f for f in flags if arg == f or arg.startswith((f + "=", f + "."))),
                    None)
        if flag is None or arg == "--":
            rest.append(arg)
            i += 1
            continue
        tail = arg[len(flag):]
        if tail.startswith("."):
            key, eq, value = tail[1:].partition("=")
            if not eq:
                if i + 1 >= len(argv):
                    raise ValueError(f"{arg} needs a value")
                value, i = argv[i + 1], i + 1
            options[key] = option_value(key, value, words)
            i += 1
            continue
        tokens = [tail[1:]] if tail else []
        i += 1
        while not tail and i < len(argv) and not argv[i].startswith("--"):
            tokens.append(argv[i])
            i += 1
        if not tokens:
            raise ValueError(f"{flag} needs KEY=VALUE, e.g. {flag} size=9")
        options.update(game_options(tokens, words))
    return rest, options
