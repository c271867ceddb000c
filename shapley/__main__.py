"""``python -m shapley``: see :mod:`shapley.cli`."""

import sys

from shapley.cli import main

if __name__ == "__main__":
    sys.exit(main())
