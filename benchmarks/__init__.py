"""The benchmark harness of agent-executor: ``python -m benchmarks.run`` (see README.md)."""
