"""``python -m server [flags]`` is ``agent-executor serve [flags]``."""

import sys

from .cli import main

sys.exit(main(["serve", *sys.argv[1:]]))
