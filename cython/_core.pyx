# cython: language_level=3
"""headrace._core: the thin Cython layer over the C++ core.

Not a public API: use headrace.Log and friends. Declarations live in
libheadrace.pxd; each concept has its own .pxi included here.
"""
from libcpp.pair cimport pair
from libheadrace cimport *

__version__ = "0.1.0"

include "error.pxi"
include "log.pxi"
include "broker.pxi"
include "segment_dump.pxi"
include "logging.pxi"
include "line_producer.pxi"
include "record_columns.pxi"
