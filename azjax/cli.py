"""Deprecated: the command-line helpers moved to `azjax.commands.errors`."""

import warnings

from azjax.commands.errors import (  # noqa: F401
    EXIT_ERROR,
    error_text,
    is_user_error,
    one_line_errors,
    report_error,
    run_script,
)

warnings.warn("azjax.cli is deprecated: import from azjax.commands.errors",
              DeprecationWarning, stacklevel=2)
