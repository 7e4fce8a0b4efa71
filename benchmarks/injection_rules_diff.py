"""What a change to the injection rules flags on every corpus text, against another commit.

    python benchmarks/injection_rules_diff.py --base HEAD

A rule is written from a kind of attack, not fitted to rows, so the first question about a new
one is what it changes on the texts it was not written from: which attacks it now flags, and
which benign texts. Every labelled text of the corpora (``tests/data/train_injection_model.py``'s
rows, the same for both trees) is scored by the rules alone (``learned=False``), once as a
user's message and once as a tool result, in the working tree (copied) and at ``--base``
(unpacked, its C parts built, as ``guard_instructions.py`` does), one process each, side by
side. Printed: for each reading, the texts whose flag (score at or above 0.5) changed, by
source, label and the protocol the evaluation scores them under (``user`` or ``tool``), and how
many scores changed at all. About a minute.

``--package-docs`` adds benign text that no corpus holds and no rule was written from: the
documentation files (``.md``, ``.rst``, ``.txt``) of the packages installed beside the guard,
cut into windows of 2,000 characters (the kind of page an agent's tool fetches), under the
source ``package-docs``. It varies with what is installed, so compare runs on one machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
READERS = ("user", "tool")
_DOC_SUFFIXES = (".md", ".rst", ".txt")
_WINDOW = 2_000


def _package_docs() -> list[str]:
    """2,000-character windows of the installed packages' documentation files."""
    root = Path(sysconfig.get_paths()["purelib"])
    windows = []
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in _DOC_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        windows += [text[i : i + _WINDOW] for i in range(0, len(text), _WINDOW)]
    return windows


def score(tree: str, out: str, docs: bool) -> None:
    """The measured process: every corpus text's rules-only score under both readers (and
    the package documentation's, with ``docs``)."""
    sys.path.insert(0, tree)
    from agent_executor.guards.injection.scoring import score_text

    sys.path.insert(0, str(DATA))  # the rows' reader imports the guard: the one above stays
    from train_injection_model import load_rows

    if not Path(sys.modules["agent_executor"].__file__ or "").is_relative_to(tree):
        raise RuntimeError(f"the guard was not imported from {tree}")

    texts = [(row["source"], row["label"], row["reader"], row["text"]) for row in load_rows()]
    if docs:
        texts += [("package-docs", "benign", "tool", text) for text in _package_docs()]
    rows = [
        {
            "source": source,
            "label": label,
            "protocol": protocol,
            **{r: score_text(text, reader=r, learned=False).score for r in READERS},
        }
        for source, label, protocol, text in texts
    ]
    Path(out).write_text(json.dumps(rows), encoding="utf-8")


def _run(tree: Path, out: Path, docs: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--score", str(tree), str(out)]
    cmd += ["docs"] if docs else ["corpora"]
    subprocess.run(cmd, check=True, cwd=ROOT, timeout=1800)
    rows: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="a git revision to compare with (required)")
    parser.add_argument(
        "--package-docs",
        action="store_true",
        help="also score the installed packages' documentation, as tool results",
    )
    parser.add_argument("--score", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.score:
        score(args.score[0], args.score[1], args.score[2] == "docs")
        return
    if not args.base:
        parser.error("--base is required")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from guard_instructions import copied, unpack

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = [copied(work), unpack(args.base, work)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            new, old = pool.map(
                lambda tree: _run(tree, tree / "scores.json", args.package_docs), trees
            )
    if len(new) != len(old):
        raise SystemExit("the two trees read a different number of corpus rows")
    print(f"{len(new):,} texts, rules alone, working tree against {args.base}")
    for reader in READERS:
        changed: Counter[tuple[str, ...]] = Counter()
        scores = 0
        for now, before in zip(new, old, strict=True):
            scores += now[reader] != before[reader]
            flagged, was = now[reader] >= 0.5, before[reader] >= 0.5
            if flagged != was:
                key = (now["source"], now["label"], now["protocol"], "+" if flagged else "-")
                changed[key] += 1
        print(f"\nread as {reader}: {scores:,} scores changed, {sum(changed.values()):,} flags")
        if changed:
            print("| source | label | evaluated as | flags gained (+) or lost (-) |")
            print("|---|---|---|---|")
            for (source, label, protocol, sign), count in sorted(changed.items()):
                print(f"| {source} | {label} | {protocol} | {sign}{count} |")


if __name__ == "__main__":
    main()
