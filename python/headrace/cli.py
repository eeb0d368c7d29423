"""The `headrace` command line."""
import sys


def main(argv=None) -> int:
    print("headrace: the broker is not built yet", file=sys.stderr)
    return 1
