"""Reliability tests: faults, fuzzing, leaks, overload and soak (issue 7, docs/reliability.md)."""
