"""A ``--tools`` module whose tool ends in ``SystemExit``, as any tool that parses its input
with argparse does on bad input (``parser.error()`` calls ``sys.exit(2)``)."""

from __future__ import annotations

import argparse

from agent_executor import tool


@tool
def get_weather(city: str) -> str:
    """Weather for a city (its argument parser exits on bad input)."""
    parser = argparse.ArgumentParser(prog="weather", add_help=False)
    parser.add_argument("--city", required=True)
    parser.parse_args([])  # --city is missing: argparse prints usage and calls sys.exit(2)
    return city
