"""The learned layer's window sums in C (``_learned_native.c``); see ``learned.Model``."""

class Table:
    """A model's word, n-gram and pair weights, hashed into one flat table."""

    def __init__(self, weights: dict[str | tuple[str, str], float]) -> None: ...
    def best(self, words: list[str], size: int) -> float:
        """The highest value of the windows of ``size`` words (``learned.windows``)."""
