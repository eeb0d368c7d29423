# cython: language_level=3
"""headrace._core: the thin Cython layer over the C++ core."""
__version__ = "0.1.0"
