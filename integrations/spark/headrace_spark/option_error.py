"""The error every option check raises (its own module: the option parsers
of several modules raise it, and options.py imports some of them)."""
from __future__ import annotations


class HeadraceOptionError(ValueError):
    """An option is missing, unknown in its context, or has a bad value."""
