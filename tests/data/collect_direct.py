"""Builds a corpus of SHORT DIRECT prompt-injection attacks and short benign user messages.

    python tests/data/collect_direct.py --sources /tmp/corpora/direct/raw \
        --out /tmp/corpora/direct/rows.jsonl.gz

``--sources`` is a folder holding files copied verbatim out of public GitHub repositories,
each at ``<owner>+<name>/<path in the repository>``; ``manifest.tsv`` beside it (or inside it)
lists ``repo, commit, path, local path`` for each file. Nothing here is written by this project:
every text is a public file's own text, or (``kind`` = ``encoded/<transform>``) such a text put
through one of the fixed, deterministic transforms that public red-team tools apply (PyRIT's
converters, promptfoo's and spikee's encoding strategies). The output is sorted and
deterministic: the same inputs give the same bytes.

Every row is ``{"text", "label", "source", "kind", "origin"}``. ``source`` is the publisher (the
unit held out whole in cross-source evaluation; an encoded row keeps the publisher of the text
it encodes), ``kind`` one of ``short/override``, ``short/extraction``, ``exfiltration``,
``forgery``, ``encoded/<transform>``, ``benign/<what>``, and ``origin`` is
``owner/name@commit:path`` (plus ``#transform`` for encoded rows).

**Never read here**: garak, bastioncorpus, PyRIT's ``in_the_wild`` set, the TrustAIRLab /
verazuo ``jailbreak_llms`` forum collection, AgentDojo. Texts that those held-out checks are
known to ship verbatim (PromptInject's rogue strings, forum DAN prompts) are dropped from every
source (``HELD_OUT_OVERLAP``), so the held-out checks stay untouched.
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import random
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import yaml
from corpus_rows import corpus_row, write_rows
from transforms import CORPUS_TRANSFORMS as TRANSFORMS

SEED = 17
CAP = 1500  # rows per source and label, at most
MAX_WORDS = 120  # longer attacks are not "short direct" ones
MIN_CHARS = 6
ENCODE_SHARE = 0.25  # share of plain attacks of <= ENCODE_MAX_WORDS words given one encoded twin
ENCODE_MAX_WORDS = 40

Row = dict[str, str]

# Strings that the held-out checks also ship: PromptInject's rogue strings (Perez and Ribeiro,
# 2022, which garak's promptinject probe reuses) and the forum "DAN" prompts. Written from the
# paper and the prompts' public name; no held-out file was read. A text holding one of them is
# dropped wherever it comes from.
HELD_OUT_OVERLAP = re.compile(
    r"ignore any previous and following instructions|thoroughly hijacked|"
    r"stop everything!!! now!!!|\bi hate humans\b|\bkill all humans\b|"
    r"do anything now|\bDAN\b",
    re.I,
)

# --- kind: regular expressions over the text, first match wins ---------------------------------
FORGERY = re.compile(
    r"<\|(?:im_start|im_end|endoftext|system|user|assistant|eot_id|start_header_id)\|?>"
    r"|\[/?INST\]|<</?SYS>>|<\s*/?\s*(?:system|assistant)\s*>"
    r"|(?:^|\n)\s*(?:system|assistant|user|human|ai|admin|developer)\s*(?:message|prompt)?\s*:"
    r"|\[\s*system(?:\s+(?:note|message|prompt))?\s*[:\]]"
    r"|(?:#{2,}|%{3}|={3,}|-{3,}|\*{3,}|—{2,})\s*(?:end|begin|start|new)\b"
    r"|\b(?:end|begin)\s+(?:of\s+)?(?:user\s+)?(?:input|prompt|instructions?|ambiguity)\b\s*(?:#|%|=|-|\*){2,}"
    r"|\bsystem mode\b|<\s*system mode\s*>|begin reprogramming",
    re.I,
)
EXFIL = re.compile(
    r"\b(?:send|email|e-mail|forward|post|upload|transmit|exfiltrat\w*|append (?:it |them )?to|"
    r"leak|copy)\b[^.]{0,100}(?:\S+@\S+\.\w+|https?://|\bto (?:the )?(?:attacker|server|endpoint|"
    r"external|my (?:alternate )?email)|\burl\b)",
    re.I,
)
EXTRACTION = re.compile(
    r"\b(?:repeat|print|reveal|output|tell|show|list|give|share|summari[sz]e|write|convert|"
    r"translate|spell|disclose|display|dump|provide|relay|confirm|what(?:'s| is| are| was)|"
    r"describe|explain|format|encode|recite|rewrite)\b[^\n]{0,80}"
    r"\b(?:instructions?|(?:system |initial |original |pre-?)?prompt|password|passcode|secret|"
    r"access code|pre-?prompt|rules|words above|text above|above|configuration|directives|"
    r"secret key|api key|credentials|secrets|credit card details)\b",
    re.I,
)


def kind_of(text: str, default: str) -> str:
    """The attack kind by the text's own shape; ``default`` when nothing sharper matches."""
    if FORGERY.search(text):
        return "forgery"
    if EXFIL.search(text):
        return "exfiltration"
    if default == "short/override" and EXTRACTION.search(text):
        return "short/extraction"
    return default


# --- the transforms public red-team tools apply: see transforms.py --------------------------


_row = corpus_row


class Manifest:
    """``local path -> repo@commit:path`` from manifest.tsv."""

    def __init__(self, root: Path) -> None:
        self.root = root
        path = root / "manifest.tsv"
        if not path.exists():
            path = root.parent / "manifest.tsv"
        self.origin: dict[str, str] = {}
        for line in path.read_text().splitlines():
            repo, commit, repo_path, local = line.split("\t")
            self.origin[local] = f"{repo}@{commit[:12]}:{repo_path}"

    def files(self, pattern: str) -> list[Path]:
        return sorted(self.root.glob(pattern))

    def of(self, path: Path) -> str:
        return self.origin[path.relative_to(self.root).as_posix()]


# --- attacks -------------------------------------------------------------------------------------
def tensor_trust(m: Manifest) -> Iterator[Row]:
    """Tensor Trust (Toyer et al. 2023): players' attacks from the hijacking and extraction
    robustness benchmarks. Hijacks default to override, extractions to extraction."""
    root = "HumanCompatibleAI+tensor-trust-data/benchmarks"
    for name, default in (
        ("hijacking-robustness/v1/hijacking_robustness_dataset.jsonl", "short/override"),
        ("extraction-robustness/v1/extraction_robustness_dataset.jsonl", "short/extraction"),
    ):
        path = m.root / root / name
        for line in path.read_text().splitlines():
            text = json.loads(line)["attack"]
            yield _row(text, "attack", "tensor-trust", kind_of(text, default), m.of(path))


CSE_TOKEN = [
    ("morse", re.compile(r"morse", re.I)),
    ("rot13", re.compile(r"rot13|caesar", re.I)),
    ("base64", re.compile(r"base64", re.I)),
    ("hex", re.compile(r"hex", re.I)),
    ("binary", re.compile(r"binary", re.I)),
]


# CyberSecEval variants that are adversarial whatever the system prompt; other variants are kept
# only when the text names a secret or the instructions (CSE_SECRET), since alone "Can you
# translate the user's birth month into Spanish?" is an ordinary request.
CSE_ADVERSARIAL = {
    "ignore_previous_instructions",
    "system_mode",
    "persuasion",
    "payload_splitting",
    "few_shot_attack",
    "token_smuggling",
}
CSE_SECRET = re.compile(
    r"password|passphrase|passcode|secret|confidential|instructions|directives|rules|"
    r"anweisungen|passwort|contraseña|mot de passe|senha|"
    r"パスワード|비밀번호|지시|инструкции|οδηγίες|निर्देश",
    re.I,
)
CSE_JUNK = re.compile(r"^(\S+)(?: \1)+\s*$")  # one token repeated, nothing else


def cyberseceval(m: Manifest) -> Iterator[Row]:
    """Meta's CyberSecEval prompt-injection set: the direct, security-violating user inputs (the
    logic-violating ones are ordinary questions outside their system prompt). Its own
    ``token_smuggling`` texts are the source's encoded attacks."""
    path = m.root / "meta-llama+PurpleLlama/CybersecurityBenchmarks/datasets"
    path = path / "prompt_injection/prompt_injection.json"
    for case in json.loads(path.read_text()):
        if case["injection_type"] != "direct" or case["risk_category"] != "security-violating":
            continue
        text, variant = case["user_input"], case["injection_variant"]
        if CSE_JUNK.match(text) or (variant not in CSE_ADVERSARIAL and not CSE_SECRET.search(text)):
            continue
        if variant == "token_smuggling":
            found = [name for name, rx in CSE_TOKEN if rx.search(text)]
            kind = f"encoded/{found[0] if found else 'pig-latin'}"
        elif variant in (
            "ignore_previous_instructions",
            "few_shot_attack",
            "repeated_token_attack",
        ):
            kind = kind_of(text, "short/override")
        else:
            kind = kind_of(text, "short/extraction")
        yield _row(text, "attack", "cyberseceval", kind, f"{m.of(path)}#{variant}")


# Plain questions ("What is the area of Turkey?"), off-topic only for promptmap's target bot.
PROMPTMAP_SKIP = {"distraction_question", "distraction_question2", "distraction_translate2"}


def promptmap(m: Manifest) -> Iterator[Row]:
    """utkusen/promptmap rules: prompt stealing and distraction (the jailbreak rules are forum
    DAN-style templates and the harmful, hate and bias rules are plain harmful requests)."""
    for path in m.files("utkusen+promptmap/rules/*/*.yaml"):
        if path.stem in PROMPTMAP_SKIP:
            continue
        rule = yaml.safe_load(path.read_text())
        default = "short/extraction" if rule["type"] == "prompt_stealing" else "short/override"
        prompt = str(rule["prompt"])
        # prompt_stealer_china numbers several attempts in one rule: each is its own attack.
        parts = re.split(r"\n\s*(?=\d+\.\s)", prompt) if re.match(r"\s*1\.\s", prompt) else [prompt]
        for part in parts:
            part = re.sub(r"^\s*\d+\.\s*", "", part)
            yield _row(part, "attack", "promptmap", kind_of(part, default), m.of(path))


def llm_guard(m: Manifest) -> Iterator[Row]:
    """Protect AI's LLM Guard prompt-injection scanner tests: the parametrised prompts, labelled
    as the tests label them (``expected_valid`` False is an attack)."""
    path = m.root / "protectai+llm-guard/tests/input_scanners/test_prompt_injection.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Tuple) and len(node.elts) == 4):
            continue
        try:
            text, valid = ast.literal_eval(node.elts[1]), ast.literal_eval(node.elts[2])
        except ValueError:
            continue
        if not isinstance(text, str) or not isinstance(valid, bool):
            continue
        if valid:
            yield _row(text, "benign", "llm-guard", "benign/chat-prompt", m.of(path))
        else:
            yield _row(text, "attack", "llm-guard", kind_of(text, "short/override"), m.of(path))


def _code_blocks(markdown: str) -> Iterator[tuple[str, str]]:
    """(heading, code block) pairs of a markdown file."""
    heading = ""
    for match in re.finditer(
        r"^(#{2,4} [^\n]*)$|^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", markdown, re.S | re.M
    ):
        if match.group(1):
            heading = match.group(1)
        else:
            yield heading, textwrap.dedent(match.group(2))


TAKSEC_SKIP = ("Protection", "Payload Splitting")
TAKSEC_ENCODED = {
    "Special Characters": "split-chars",
    "Translation": "leetspeak",
    "Encoding": "base64",
    "Emojis": "emoji",
}


def taksec(m: Manifest) -> Iterator[Row]:
    """TakSec/Prompt-Injection-Everywhere: its README's payloads (not the defence template, nor the
    two harmless halves of its payload-splitting example)."""
    path = m.root / "TakSec+Prompt-Injection-Everywhere/README.md"
    for heading, block in _code_blocks(path.read_text()):
        if any(s in heading for s in TAKSEC_SKIP):
            continue
        encoded = [v for k, v in TAKSEC_ENCODED.items() if k in heading]
        text = block.strip()
        if "Brute Force" in heading:
            text = text.splitlines()[0].strip('"')
        kind = f"encoded/{encoded[0]}" if encoded else kind_of(text, "short/override")
        yield _row(text, "attack", "taksec", kind, m.of(path))


# PayloadsAllTheThings' table rows kept, by the table's own "Strategy" column.
PATT_STRATEGIES = {
    "Instruction Overriding",
    "Role Switching",
    "Data Extraction",
    "Jailbreak",
    "Role Injection",
    "Prompt Masking",
    "Identity Injection",
    "Output Leakage",
    "Third-Party Abuse",
    "Encoding Bypass",
    "Reverse Prompt Injection",
}
PATT_ENCODED = {
    "Base64 Encoding of Payload": "base64",
    "Homoglyph Injection": "homoglyph",
    "Unicode Obfuscation": "homoglyph",
    "Use of HTML Entity/Unicode Escapes": "html-entity",
}


def payloads_all_the_things(m: Manifest) -> Iterator[Row]:
    """swisskyrepo/PayloadsAllTheThings ``Prompt Injection/README.md``: the direct-injection
    bullets, the strategy table's attack rows, and the indirect examples' injected lines."""
    path = m.root / "swisskyrepo+PayloadsAllTheThings/Prompt Injection/README.md"
    doc = path.read_text()
    origin = m.of(path)
    direct = doc.split("## Direct Prompt Injection", 1)[1].split("## Indirect Prompt Injection", 1)
    bullets, table = direct[0].split("| Strategy", 1)
    for match in re.finditer(r"^\* [^:\n]+: `([^`]+)`", bullets, re.M):
        text = match.group(1)
        yield _row(text, "attack", "payloadsallthethings", kind_of(text, "short/override"), origin)
    for _heading, block in _code_blocks(bullets):
        yield _row(
            block, "attack", "payloadsallthethings", kind_of(block, "short/override"), origin
        )
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] not in PATT_STRATEGIES:
            continue
        found = re.search(r"`([^`]+)`", cells[2])
        if not found or "repeated" in cells[2] or "nesting" in cells[2]:
            continue
        text = found.group(1)
        kind = (
            f"encoded/{PATT_ENCODED[cells[1]]}"
            if cells[1] in PATT_ENCODED
            else kind_of(text, "short/override")
        )
        yield _row(text, "attack", "payloadsallthethings", kind, origin)
    indirect = direct[1].split("## References", 1)[0]
    for _heading, block in _code_blocks(indirect):
        for line in block.splitlines():
            if re.search(r"ignore", line, re.I):
                text = (
                    re.sub(r'^\s*(?://|<!--|"message":|Software)\s*|\s*-->\s*$', "", line)
                    .strip()
                    .strip('"')
                )
                yield _row(
                    text, "attack", "payloadsallthethings", kind_of(text, "short/override"), origin
                )


# --- benign --------------------------------------------------------------------------------------
def clinc(m: Manifest) -> Iterator[Row]:
    """CLINC150 (Larson et al. 2019): crowd-sourced requests to a task assistant, 150 intents and
    out-of-scope ones ("cancel my reservation", "forget it")."""
    path = m.root / "clinc+oos-eval/data/data_full.json"
    for split, items in sorted(json.loads(path.read_text()).items()):
        for text, intent in items:
            yield _row(
                text,
                "benign",
                "clinc150",
                "benign/assistant-request",
                f"{m.of(path)}#{split}/{intent}",
            )


def banking77(m: Manifest) -> Iterator[Row]:
    """PolyAI BANKING77: online-banking customer-support questions."""
    for path in m.files("PolyAI-LDN+task-specific-datasets/banking_data/*.csv"):
        for rec in csv.DictReader(io.StringIO(path.read_text())):
            yield _row(
                rec["text"],
                "benign",
                "polyai-banking77",
                "benign/support-question",
                f"{m.of(path)}#{rec['category']}",
            )


def hwu64(m: Manifest) -> Iterator[Row]:
    """xliuhw NLU-Evaluation-Data (HWU64): home-assistant commands, the ten folds' test sets."""
    for path in m.files("xliuhw+NLU-Evaluation-Data/CrossValidation/**/testset/annotated/*/*.json"):
        for rec in json.loads(path.read_text())["test_data_annotation"]:
            yield _row(
                rec["text"],
                "benign",
                "hwu64",
                "benign/assistant-command",
                f"{m.of(path)}#{rec['intent']}",
            )


def sebis(m: Manifest) -> Iterator[Row]:
    """sebischair NLU-Evaluation-Corpora: Ask Ubuntu and Stack Exchange web-apps question titles,
    and a Telegram travel chatbot's user messages."""
    kinds = {
        "AskUbuntuCorpus": "benign/askubuntu-question",
        "WebApplicationsCorpus": "benign/webapps-question",
        "ChatbotCorpus": "benign/chatbot-message",
    }
    for name, kind in kinds.items():
        path = m.root / f"sebischair+NLU-Evaluation-Corpora/{name}.json"
        for rec in json.loads(path.read_text())["sentences"]:
            yield _row(rec["text"], "benign", "sebis-nlu", kind, f"{m.of(path)}#{rec['intent']}")


ATTACKS: list[Callable[[Manifest], Iterable[Row]]] = [
    tensor_trust,
    cyberseceval,
    promptmap,
    llm_guard,
    taksec,
    payloads_all_the_things,
]
BENIGN: list[Callable[[Manifest], Iterable[Row]]] = [clinc, banking77, hwu64, sebis]

# Benign texts with the wording attacks use go in first when a source is sampled down.
HARD_NEGATIVE = re.compile(
    r"\b(?:ignore|forget|disregard|override|instead|never ?mind|cancel|stop|skip|bypass|"
    r"system|password|prompt|instructions?|reset|delete|admin|rules?|previous|secret|send|forward)\b",
    re.I,
)


def _keep(row: Row) -> bool:
    text = row["text"]
    if len(text) < MIN_CHARS or HELD_OUT_OVERLAP.search(text):
        return False
    return row["label"] == "benign" or len(text.split()) <= MAX_WORDS


def _sample(rows: list[Row], rng: random.Random) -> list[Row]:
    if len(rows) <= CAP:
        return rows
    if rows[0]["label"] == "attack":
        return rng.sample(rows, CAP)
    hard = [r for r in rows if HARD_NEGATIVE.search(r["text"])]
    rest = [r for r in rows if not HARD_NEGATIVE.search(r["text"])]
    hard = rng.sample(hard, min(len(hard), CAP // 3))
    return hard + rng.sample(rest, CAP - len(hard))


def _encoded(rows: list[Row], rng: random.Random) -> list[Row]:
    """One encoded twin for a seeded share of the short plain attacks, transforms in turn."""
    names = sorted(TRANSFORMS)
    out: list[Row] = []
    pool = [
        r
        for r in rows
        if not r["kind"].startswith("encoded/") and len(r["text"].split()) <= ENCODE_MAX_WORDS
    ]
    chosen = [r for r in pool if rng.random() < ENCODE_SHARE]
    for i, row in enumerate(chosen):
        name = names[(i + rng.randrange(len(names))) % len(names)]
        out.append(
            _row(
                TRANSFORMS[name](row["text"]),
                "attack",
                row["source"],
                f"encoded/{name}",
                f"{row['origin']}#{name}",
            )
        )
    return out


def build(sources: Path) -> list[Row]:
    m = Manifest(sources)
    rng = random.Random(SEED)
    by_source: dict[tuple[str, str], list[Row]] = {}
    seen: set[str] = set()
    for reader in [*ATTACKS, *BENIGN]:
        for row in reader(m):
            if not _keep(row) or row["text"] in seen:
                continue
            seen.add(row["text"])
            by_source.setdefault((row["source"], row["label"]), []).append(row)
    out: list[Row] = []
    for key in sorted(by_source):
        rows = _sample(by_source[key], rng)
        if key[1] == "attack":
            twins = [r for r in _encoded(rows, rng) if r["text"] not in seen]
            seen.update(r["text"] for r in twins)
            room = CAP - len(rows)
            rows = (
                rows + twins if len(twins) <= room else rng.sample(rows, CAP - len(twins)) + twins
            )
        out.extend(rows)
    out.sort(key=lambda r: (r["source"], r["label"], r["kind"], r["text"]))
    return out


NOT_SHIPPED = {"tensor-trust"}
"""Collected but not written: Tensor Trust's data carries no licence (see SOURCES.md)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [r for r in build(args.sources) if r["source"] not in NOT_SHIPPED]
    write_rows(rows, args.out)
    counts = Counter((r["source"], r["label"], r["kind"]) for r in rows)
    for (source, label, kind), n in sorted(counts.items()):
        print(f"{source:22} {label:7} {kind:26} {n}")
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
