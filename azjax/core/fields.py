"""Marks on config fields: which settings the compiled program takes as traced values.

A setting is *traced* when changing it changes no shape and no branch of the compiled
training iteration (c_puct, Dirichlet noise, the Gumbel scale, the learning rate): the
program receives it as an array, so runs that differ only in traced settings (and their
seeds) share one compiled program and can be vmapped together. Every other setting is
*compiled in*. The mark is made once, on the field, with `traced(...)`; everything that
needs the list derives it from the mark:

* `checked(prefix, pytree=True)` registers a config class as a pytree whose leaves are
  its traced fields and whose static metadata is everything else, so a `SearchConfig`
  passed into a jitted function carries c_puct as a traced value and `num_simulations`
  as a Python int;
* `traced_paths` lists them for the sweep's compile groups;
* `compiled_value` gives what of a traced value the program still depends on
  (`rollout_lambda` compiles random playouts in when it is > 0).

A setting's bounds are declared on its field too (`bounded(...)`, or `traced(...)` with
bounds), and its kind by its annotation (int, float, bool, str, a Literal of choices, a
nested config). `checked` makes a config class check every field, and its own
cross-field rules (`_check`), whenever a config is made or replaced: a config that
exists is valid, so the code that receives one trusts it. A pytree rebuilt by JAX (inside
`jit`, `vmap`, `tree.map`) is not made again and is not checked: its leaves are arrays.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
import typing
from collections.abc import Iterator
from typing import Any, Callable

import jax

from envs.limits import INT32_MAX, check_option

_TRACED = "azjax.traced"
_BOUNDS = "azjax.bounds"
_CHECKING = contextvars.ContextVar("azjax_config_checks", default=True)


def _always_traced(value: Any) -> None:
    del value
    return None


def traced(default: Any, *, compiled_as: Callable[[Any], Any] | None = None,
           low: float | None = None, high: float | None = None,
           above: float | None = None) -> Any:
    """A config field the compiled program takes as a traced value.

    Args:
      default: the field's default.
      compiled_as: what of the value the program still compiles in (e.g.
        `lambda v: v > 0` for a setting whose zero switches a computation off); by
        default nothing.
      low: an inclusive lower bound of the value (None: none).
      high: an inclusive upper bound (None: none).
      above: an exclusive lower bound (None: none).

    Returns:
      The `dataclasses.field`.
    """
    return dataclasses.field(default=default, metadata={
        _TRACED: compiled_as or _always_traced, _BOUNDS: (low, high, above)})


def bounded(default: Any, *, low: float | None = None, high: float | None = None,
            above: float | None = None) -> Any:
    """A compiled-in numeric config field with bounds, checked when a config is made.

    Args:
      default: the field's default.
      low: an inclusive lower bound of the value (None: none).
      high: an inclusive upper bound (None: none).
      above: an exclusive lower bound (None: none).

    Returns:
      The `dataclasses.field`.
    """
    return dataclasses.field(default=default, metadata={_BOUNDS: (low, high, above)})


def check_fields(config: Any, prefix: str = "") -> None:
    """Checks every field of a config dataclass against its annotation and bounds.

    A traced field holding an array (a config rebuilt inside a jitted function) is not
    checked: it was checked as a number when the config was made.

    Args:
      config: a config dataclass instance.
      prefix: the settings' path prefix in messages ('search.').

    Raises:
      ValueError: one line naming the first bad setting and what it must be.
    """
    for name, kind, bounds, traced_field in _declared(type(config)):
        value = getattr(config, name)
        if traced_field and not isinstance(value, (bool, int, float, str)):
            continue
        _check_value(prefix + name, value, kind, bounds)


@functools.cache
def _declared(cls: type) -> tuple[tuple[str, Any, tuple, bool], ...]:
    """Each field of a config class as (name, kind, bounds, traced): read from the class
    once, not at every config made (`typing.get_type_hints` evaluates the annotations)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.metadata.get(_BOUNDS, (None, None, None)),
                  is_traced(f)) for f in dataclasses.fields(cls))


def _check_value(path: str, value: Any, kind: Any, bounds: tuple) -> None:
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, kind):
            raise ValueError(f"{path} must be a {kind.__name__}, got {value!r}")
    elif origin is typing.Literal:
        choices = typing.get_args(kind)
        if not isinstance(value, str) or value not in choices:
            raise ValueError(f"{path} must be one of {choices}, got {value!r}")
    elif kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{path} must be true or false, got {value!r}")
    elif kind in (int, float):
        low, high, above = bounds
        check_setting(path, value, kind, low, high, above=above)
    elif kind is str:
        if not isinstance(value, str):
            raise ValueError(f"{path} must be a string, got {value!r}")
    elif origin is tuple:
        if isinstance(value, str) or not isinstance(value, (tuple, list)):
            raise ValueError(f"{path} must be a list of values, not {value!r}")


def checked(prefix: str = "", *, pytree: bool = False) -> Callable[[type], type]:
    """Makes a frozen config dataclass that checks itself whenever it is made or replaced.

    Each field is checked by `check_fields`, then the class's own `_check(self)` (if it
    has one) checks the rules that join fields. `validate()` runs the same checks again.

    Args:
      prefix: the settings' path prefix in messages ('search.'; '' at the top).
      pytree: also register the class as a pytree whose leaves are its traced fields and
        whose static metadata is everything else (which must then be hashable).

    Returns:
      The class decorator.
    """
    def make(cls: type) -> type:
        def check(self) -> None:
            check_fields(self, prefix)
            own = getattr(self, "_check", None)
            if own is not None:
                own()

        def post_init(self) -> None:
            if _CHECKING.get():
                check(self)

        def validate(self) -> None:
            """Raises ValueError, naming the setting, for a bad value: every nested config
            first, then this one. A config is checked when it is made; this is for one
            made while checks were deferred (`checks_deferred`)."""
            for field in dataclasses.fields(self):
                value = getattr(self, field.name)
                if dataclasses.is_dataclass(value) and hasattr(value, "validate"):
                    value.validate()
            check(self)

        cls.__post_init__ = post_init
        cls.validate = validate
        cls = dataclasses.dataclass(frozen=True)(cls)
        if "replace" not in cls.__dict__:
            cls.replace = _replace
        if pytree:
            _register_pytree(cls)
        return cls

    return make


@contextlib.contextmanager
def checks_deferred() -> Iterator[None]:
    """Configs made inside the block are not checked when made; call `validate()` on the
    outermost one after it. For a parser that builds a config from its parts and reports
    a constructor's ValueError in its own words (tyro): the one-line error stays ours."""
    token = _CHECKING.set(False)
    try:
        yield
    finally:
        _CHECKING.reset(token)


def _register_pytree(cls: type) -> None:
    """Traced fields as leaves, the rest as static metadata. A pytree JAX rebuilds is not
    made through `__init__`: its leaves may be tracers, or the placeholders of `vmap`'s
    axes, which are not settings."""
    fields = dataclasses.fields(cls)
    data = [f.name for f in fields if is_traced(f)]
    meta = [f.name for f in fields if not is_traced(f)]

    def flatten_with_keys(config):
        children = [(jax.tree_util.GetAttrKey(name), getattr(config, name)) for name in data]
        return children, tuple(getattr(config, name) for name in meta)

    def unflatten(static, children):
        config = object.__new__(cls)
        for name, value in (*zip(meta, static), *zip(data, children)):
            object.__setattr__(config, name, value)
        return config

    def flatten(config):
        return [getattr(config, name) for name in data], tuple(
            getattr(config, name) for name in meta)

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


def is_traced(field: dataclasses.Field) -> bool:
    """Whether `field` was declared with `traced(...)`."""
    return _TRACED in field.metadata


def compiled_value(field: dataclasses.Field, value: Any) -> Any:
    """What the compiled program depends on: the value itself for a compiled-in field,
    `compiled_as(value)` (default None) for a traced one."""
    if is_traced(field):
        return field.metadata[_TRACED](value)
    return value


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
