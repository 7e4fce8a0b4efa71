"""How the :class:`~agent_executor.models.demo.DemoModel` calls any tool it is offered.

A tool is called when the user's message names it: its name (``lookup_order``, or "lookup
order"), a word of its name that is not a common verb ("order"), or two words of its
description. Its arguments are drawn from the message by its JSON schema, required ones first:
``name: value`` (or ``name=value``, ``name is value``) wherever it is written, an ``enum``
value the message contains, numbers in the order they appear for ``integer`` and ``number``
parameters, quoted text, then the words after the tool's name, for ``string`` ones; a
required parameter nothing was found for gets its schema's default or an empty value of its
type. The model is offline and deterministic: this is keyword matching, not understanding.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_CALLS", "named_calls"]

MAX_CALLS = 3
"""At most this many tools are called for one message (the best-named first)."""

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_QUOTED_RE = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<!\w)'([^']+)'(?!\w)")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SENTENCE_END_RE = re.compile(r"[?!;\n]|\.(?!\d)")
_PAIR_RE = re.compile(r"\b\w+\s*[:=]\s*(?:\"[^\"]*\"|'[^']*'|[^\s,;?!]+)")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP = _set(
    "a an the and or but of for to in on at by with from about into than then this that these "
    "those is are was were be been it its me my we our you your i he she they them please can "
    "could would should will shall may might must what which who whom whose how when where why "
    "tell give show do does did use using call run tool tools function value some any all "
    "just also want need like know there here now today"
)
_COMMON_VERBS = _set(
    "get set fetch find list lookup look check create make show do run compute calculate "
    "search read write update delete add remove send"
)
_LEADING = _set("a an the for of about on with to in at from by and that please : ,")
_HANDOFF_PREFIX = "transfer_to_"  # a handoff gives the conversation away: asked for by name only


@dataclass
class _Message:
    """The user's message, and what of it the arguments of one tool have used."""

    text: str
    numbers: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> _Message:
        quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED_RE.finditer(text)]
        return cls(text, _NUMBER_RE.findall(text), quoted)


def named_calls(
    prompt: str, tools: Sequence[Mapping[str, Any]], skip: Collection[str] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """The tools among ``tools`` (OpenAI function specs) that ``prompt`` names, with the
    arguments drawn from it, best-named first (at most :data:`MAX_CALLS`); ``skip`` names
    tools that are never picked this way."""
    words = _stems(prompt)
    scored: list[tuple[int, int, str, dict[str, Any], int]] = []
    for order, spec in enumerate(tools):
        function = spec.get("function") or {}
        name = str(function.get("name") or "")
        if not name or name in skip:
            continue
        score, where = _score(prompt, words, name, str(function.get("description") or ""))
        if score >= 2:
            scored.append((-score, order, name, function.get("parameters") or {}, where))
    scored.sort(key=lambda item: item[:2])
    return [
        (name, _arguments(prompt, schema, after=where))
        for _, _, name, schema, where in scored[:MAX_CALLS]
    ]


def _score(prompt: str, words: dict[str, int], name: str, description: str) -> tuple[int, int]:
    """How well ``prompt`` names the tool (2 for each word of its name, 1 for each of its
    description; the whole name wins outright), and where in it the tool is named (the end of
    the last word that names it)."""
    spelled = re.search(
        r"\b" + r"[\s_-]*".join(map(re.escape, _name_words(name))) + r"\b", prompt, re.I
    )
    if spelled is not None:
        return 100, spelled.end()
    if name.startswith(_HANDOFF_PREFIX):
        return 0, 0
    named = [w for w in _name_words(name) if w not in _COMMON_VERBS] or _name_words(name)
    hits = {_stem(w) for w in named} & words.keys()
    described = set(_stems(description)) & words.keys() - hits
    score = 2 * len(hits) + len(described)
    return score, max((words[w] for w in hits | described), default=0)


def _name_words(name: str) -> list[str]:
    return [w.lower() for w in re.split(r"[_\-\s]+", _CAMEL_RE.sub(" ", name)) if w]


def _stems(text: str) -> dict[str, int]:
    """The significant words of ``text`` (stemmed), each with where it ends in the text."""
    found: dict[str, int] = {}
    for match in _WORD_RE.finditer(text):
        word = match.group().lower()
        if len(word) >= 3 and word not in _STOP:
            found.setdefault(_stem(word), match.end())
    return found


def _stem(word: str) -> str:
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def _arguments(prompt: str, schema: Mapping[str, Any], *, after: int) -> dict[str, Any]:
    """Arguments for a tool of parameters ``schema`` drawn from ``prompt``, where the tool is
    named at ``after`` (the words after it are the first string parameter's fallback)."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = [n for n in schema.get("required") or () if n in properties]
    order = required + [n for n in properties if n not in required]
    message = _Message.of(prompt)
    rest = _rest(prompt, after)
    found: dict[str, Any] = {}
    for name in order:
        prop = _resolved(properties[name], schema)
        value = _value(name, prop, message)
        if value is None and rest and name in required and _free_text(prop):
            value, rest = (rest.split()[0] if _names_an_id(name) else rest), ""
        if value is None and name in required:
            value = prop["default"] if "default" in prop else _empty(_kind(prop))
        if value is not None:
            found[name] = value
    return found


def _resolved(prop: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A property's schema with a local ``$ref`` followed and an optional's ``anyOf`` /
    ``oneOf`` reduced to its first type that is not ``null``."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (schema.get("$defs") or {}).get(ref.removeprefix("#/$defs/")) or {}
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    for key in ("anyOf", "oneOf"):
        options = [o for o in prop.get(key) or () if o.get("type") != "null"]
        if options:
            merged = {**_resolved(options[0], schema), **prop}
            merged.pop(key)
            return merged
    return prop


def _free_text(prop: Mapping[str, Any]) -> bool:
    return _kind(prop) == "string" and "enum" not in prop and "const" not in prop


def _names_an_id(name: str) -> bool:
    """Whether a parameter is an identifier (``order_id``, ``code``): one word of text."""
    last = _name_words(name)[-1]
    return last in ("id", "code", "key", "number", "ref", "sku") or last.endswith("id")


def _kind(prop: Mapping[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "enum" in prop:
        return "string"
    return str(kind or "string")


def _value(name: str, prop: Mapping[str, Any], message: _Message) -> Any:
    """The value the message gives the parameter ``name``, or ``None``."""
    kind = _kind(prop)
    explicit = _explicit(name, message.text)
    if explicit is not None:
        value = _converted(explicit, kind)
        if value is not None:
            return value
    choices = prop.get("enum")
    if choices:
        lowered = message.text.lower()
        return next(
            (c for c in choices if re.search(rf"\b{re.escape(str(c).lower())}\b", lowered)), None
        )
    if kind in ("integer", "number") and message.numbers:
        return _converted(message.numbers.pop(0), kind)
    if kind == "string" and message.quoted:
        return message.quoted.pop(0)
    if kind == "array":
        return _items(prop, message)
    return None


def _explicit(name: str, text: str) -> str | None:
    """``name: value``, ``name=value`` or ``name is value`` in the text (quotes allowed)."""
    spelled = r"[\s_-]*".join(map(re.escape, _name_words(name)))
    match = re.search(
        rf"\b{spelled}\s*(?::|=|\bis\b)\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s,;?!]+))", text, re.I
    )
    if match is None:
        return None
    return next(g for g in match.groups() if g is not None)


def _converted(raw: str, kind: str) -> Any:
    """``raw`` as a JSON value of ``kind`` (``None`` when it is not one)."""
    try:
        if kind == "integer":
            return int(float(raw)) if float(raw).is_integer() else None
        if kind == "number":
            return float(raw) if "." in raw else int(raw)
    except ValueError:
        return None
    if kind == "boolean":
        return raw.lower() in ("true", "yes", "1", "on")
    return raw if kind == "string" else None


def _items(prop: Mapping[str, Any], message: _Message) -> list[Any] | None:
    items = prop.get("items") or {}
    kind = _kind(items) if isinstance(items, Mapping) else "string"
    if kind in ("integer", "number") and message.numbers:
        values = [_converted(n, kind) for n in message.numbers]
        message.numbers.clear()
        return [v for v in values if v is not None]
    if kind == "string" and message.quoted:
        values = list(message.quoted)
        message.quoted.clear()
        return values
    return None


def _rest(prompt: str, after: int) -> str:
    """The words after where the tool is named, to the end of the sentence, without the
    small words around them ("for", "about", "please") nor ``name=value`` pairs."""
    tail = prompt[after:]
    end = _SENTENCE_END_RE.search(tail)
    tail = _PAIR_RE.sub(" ", tail[: end.start()] if end else tail)
    words = tail.replace('"', " ").split()
    while words and words[0].lower().strip(",:") in _LEADING:
        words.pop(0)
    while words and words[-1].lower().strip(",:") in _LEADING:
        words.pop()
    return " ".join(words).strip(" ,:")


def _empty(kind: str) -> Any:
    return {
        "string": "",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "object": {},
    }.get(kind)
