"""Builds the over-defense check: NotInject's benign prompts, measured on and never trained on.

    python tests/data/collect_overdefense.py --git <git dir of leolee99/PIGuard> \
        --out tests/data/injection_overdefense.jsonl.gz

NotInject (Li, Liu and Xiao, "InjecGuard: Benchmarking and Mitigating Over-defense in Prompt
Injection Guardrail Models", 2024; MIT, in ``leolee99/PIGuard``) is 339 benign prompts, each
built around one, two or three words that injection attacks use ("ignore", "unfiltered",
"pretend", "system"), in English, Chinese and a few other languages. It measures what a guard
flags because of those words alone. Its rows join the corpora under the source ``notinject``,
which ``train_injection_model.EVAL_ONLY`` keeps out of every training set, so its figure is the
guard's on texts neither the rules nor the learned layer were written or fitted on.

Every row is ``{"text", "label": "benign", "source": "notinject", "kind", "origin", "lang"}``;
``kind`` is ``benign/notinject-<n>-trigger``, ``lang`` is read off the text's script (Han: zh,
Cyrillic: ru) or, for Latin text, from its function words (en unless Spanish). The files are
read at a fixed commit with ``git show``; the output is sorted and the same bytes every time.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import unicodedata
from pathlib import Path

from corpus_rows import corpus_row, write_rows

REPO = "leolee99/PIGuard"
COMMIT = "1b5751e88bf7475acbedfc8eda795ce060307c84"
FILES = {"one": 1, "two": 2, "three": 3}
_SCRIPTS = (("CJK", "zh"), ("CYRILLIC", "ru"), ("HIRAGANA", "ja"), ("KATAKANA", "ja"))
_SPANISH = re.compile(r"\b(?:por favor|una|que|los|las|el|del|en|sido|años)\b", re.I)
_ENGLISH = re.compile(r"\b(?:the|and|of|to|a|in|is|you|for|with|please|can|how|what)\b", re.I)


def language(text: str) -> str:
    for char in text:
        name = unicodedata.name(char, "")
        for script, lang in _SCRIPTS:
            if script in name:
                return lang
    spanish, english = len(_SPANISH.findall(text)), len(_ENGLISH.findall(text))
    return "es" if spanish > english else "en"


def rows(git_dir: Path) -> list[dict[str, str]]:
    out = []
    for name, triggers in FILES.items():
        path = f"datasets/NotInject_{name}.json"
        shown = subprocess.run(
            ["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:{path}"],
            check=True,
            capture_output=True,
        ).stdout
        for item in json.loads(shown):
            text = item["prompt"]
            if text.strip():
                out.append(
                    corpus_row(
                        text,
                        "benign",
                        "notinject",
                        f"benign/notinject-{triggers}-trigger",
                        f"{REPO}@{COMMIT[:12]}:{path}",
                        lang=language(text),
                    )
                )
    return sorted(out, key=lambda r: (r["kind"], r["text"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", type=Path, required=True, help="a clone's git directory")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    built = rows(args.git)
    write_rows(built, args.out)
    print(f"{len(built)} rows -> {args.out}")


if __name__ == "__main__":
    main()
