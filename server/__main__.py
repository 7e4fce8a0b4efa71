"""``python -m server [flags]`` is ``agent-executor serve [flags]``; ``python -m server mcp
[flags]`` is ``agent-executor mcp [flags]``."""

import sys

from .cli import main

_COMMANDS = ("serve", "mcp")

arguments = sys.argv[1:]
sys.exit(main(arguments if arguments[:1] and arguments[0] in _COMMANDS else ["serve", *arguments]))
