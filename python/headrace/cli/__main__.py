"""``python -m headrace.cli``: the same as the ``headrace`` command."""
import sys

from headrace.cli.app import main

sys.exit(main())
