"""`envs.check_env`'s picture property: what is wrong with a game's `env.picture` of one
state (`RULES["picture"]`)."""

from __future__ import annotations

import math
from xml.etree import ElementTree

import numpy as np

from envs.core import Env
from envs.origin import user_frame as _user_frame
from envs.picture import Picture
from envs.state import State


def picture_problem(env: Env, state: State, last_move: int | None) -> str | None:
    """What is wrong with `env.picture(state, last_move)`, or None.

    Args:
      env: the game.
      state: one (unbatched) state of it.
      last_move: the move that led to `state`, or None.

    Returns:
      One line naming the first problem (the call raised, returned no `Picture`, drew
      SVG that is not well-formed XML, or put a move's spot off the picture), or None.
    """
    call = f"env.picture(state, last_move={last_move})"
    try:
        picture = env.picture(state, last_move=last_move)
    except Exception as err:  # noqa: BLE001 - reported as a failed check
        return f"{call} raised {type(err).__name__}{_user_frame(err)}: {err}"
    if not isinstance(picture, Picture):
        return f"{call} returned a {type(picture).__name__}, not an envs.picture.Picture"
    try:
        ElementTree.fromstring(picture.svg())
    except Exception as err:  # noqa: BLE001 - reported as a failed check
        return f"the svg() of {call} is not well-formed XML: {type(err).__name__}: {err}"
    w, h = picture.width, picture.height
    for action, spot in picture.spots.items():
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not (
                0 <= action < env.num_actions):
            return (f"{call} has a spot for {action!r}, which is not an int action in "
                    f"[0, {env.num_actions})")
        try:
            x, y = (float(v) for v in spot)
        except (TypeError, ValueError):
            return f"{call} has the spot {spot!r} for action {action}, not a point (x, y)"
        if not (math.isfinite(x) and math.isfinite(y) and 0 <= x <= w and 0 <= y <= h):
            return (f"{call} puts the spot of action {action} at ({x:g}, {y:g}), outside "
                    f"the picture (0..{w:g}, 0..{h:g})")
    return None
