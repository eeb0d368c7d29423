"""headrace: a Kafka-wire-compatible streaming log broker with a C++ core."""
from headrace._core import __version__

__all__ = ["__version__"]
