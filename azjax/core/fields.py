"""Marks on config fields: which settings the compiled program takes as traced values.

A setting is *traced* when changing it changes no shape and no branch of the compiled
training iteration (c_puct, Dirichlet noise, the Gumbel scale, the learning rate): the
program receives it as an array, so runs that differ only in traced settings (and their
seeds) share one compiled program and can be vmapped together. Every other setting is
*compiled in*. The mark is made once, on the field, with `traced(...)`; everything that
needs the list derives it from the mark:

* `config_dataclass` registers a config class as a pytree whose leaves are its traced
  fields and whose static metadata is everything else, so a `SearchConfig` passed into a
  jitted function carries c_puct as a traced value and `num_simulations` as a Python int;
* `traced_paths` lists them for the sweep's compile groups;
* `compiled_value` gives what of a traced value the program still depends on
  (`rollout_lambda` compiles random playouts in when it is > 0).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Any, Callable

import jax

from envs.limits import INT32_MAX, check_option

_TRACED = "azjax.traced"


def _always_traced(value: Any) -> None:
    del value
    return None


def traced(default: Any, *, compiled_as: Callable[[Any], Any] | None = None) -> Any:
    """A config field the compiled program takes as a traced value.

    Args:
      default: the field's default.
      compiled_as: what of the value the program still compiles in (e.g.
        `lambda v: v > 0` for a setting whose zero switches a computation off); by
        default nothing.
    """
    return dataclasses.field(default=default, metadata={_TRACED: compiled_as or _always_traced})


def is_traced(field: dataclasses.Field) -> bool:
    """Whether `field` was declared with `traced(...)`."""
    return _TRACED in field.metadata


def compiled_value(field: dataclasses.Field, value: Any) -> Any:
    """What the compiled program depends on: the value itself for a compiled-in field,
    `compiled_as(value)` (default None) for a traced one."""
    if is_traced(field):
        return field.metadata[_TRACED](value)
    return value


def config_dataclass(cls: type) -> type:
    """A frozen dataclass that is also a pytree: traced fields are its leaves, the other
    fields static metadata (they must be hashable)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    cls.replace = _replace
    fields = dataclasses.fields(cls)
    jax.tree_util.register_dataclass(
        cls,
        data_fields=[f.name for f in fields if is_traced(f)],
        meta_fields=[f.name for f in fields if not is_traced(f)],
    )
    return cls


def _replace(self, **changes):
    """A copy with `changes` applied (`dataclasses.replace`)."""
    return dataclasses.replace(self, **changes)


def setting_types(cls: type, prefix: str = "") -> dict[str, Any]:
    """Every scalar setting of a (nested) config dataclass: dotted path -> its type."""
    out: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        path = prefix + field.name
        if dataclasses.is_dataclass(kind):
            out.update(setting_types(kind, path + "."))
        else:
            out[path] = kind
    return out


def traced_paths(cls: type, prefix: str = "") -> list[str]:
    """Dotted paths of every traced field of a (nested) config dataclass."""
    out = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind):
            out += traced_paths(kind, f"{prefix}{field.name}.")
        elif is_traced(field):
            out.append(prefix + field.name)
    return out


def compiled_part(config: Any) -> Any:
    """`config` as nested plain data with every traced value replaced by what the program
    compiles of it: equal for configs that compile to one program."""
    out = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            out[field.name] = compiled_part(value)
        else:
            out[field.name] = compiled_value(field, value)
    return out


def check_setting(path: str, value: Any, kind: type, low: float | None = None,
                  high: float | None = None, *, above: float | None = None) -> None:
    """Raises ValueError naming the setting `path` unless `value` is a `kind` (int or
    float, finite) within the bounds (`envs.limits.check_option`); an int without a `high`
    is at most 2**31 - 1, as the compiled program counts in int32."""
    number = check_option(path, value, kind, low, high, above=above)
    if kind is int and high is None and number > INT32_MAX:
        raise ValueError(f"{path} must be <= 2**31 - 1 (an int32 in the compiled program), "
                         f"got {value!r}")


def is_scalar(kind: Any) -> bool:
    """Whether a setting of type `kind` is written as one value (`parse_setting`)."""
    return typing.get_origin(kind) is typing.Literal or kind in (bool, int, float, str)


def parse_setting(path: str, kind: Any, text: str) -> Any:
    """A value of setting `path`, of a scalar type `kind` (bool, int, float, str or a
    Literal of strings), parsed from text; ValueError naming the setting when it cannot
    be."""
    if not is_scalar(kind):
        raise ValueError(f"{path} is not a scalar setting")
    text = text.strip()
    choices = typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else None
    try:
        if choices is not None:
            if text not in choices:
                raise ValueError
            return text
        if kind is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError
            return lowered in ("true", "1")
        if kind is int:
            return int(text)
        if kind is float:
            value = float(text)
            if not math.isfinite(value):
                raise ValueError
            return value
        if not text:
            raise ValueError
        return text
    except ValueError:
        expected = f"one of {', '.join(choices)}" if choices else kind.__name__
        raise ValueError(f"bad value {text!r} for {path} (expected {expected})") from None
