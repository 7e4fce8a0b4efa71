"""The docs run as written: every code block of README.md and docs/*.md that claims to run is
run offline, and prints what the doc shows (issue #30).

The convention (docs/architecture.md, "Docs that run"):

- A ``python`` block runs as ``python -c`` of this interpreter (the repository's venv) would run
  it (forked from one that has imported agent_executor, see ``_FORKER``), from the checkout's
  root, without provider keys or ``LLM_*`` variables (so on ``demo`` and ``ScriptedModel``
  only), within 60 s. It fails on a non-zero exit, and on ``Traceback`` or ``Unclosed`` (a
  session left open) in its stderr.
- A ``text`` block right after it (only blank lines between) is its whole standard output.
  ``...`` stands for any text: a line of its own for any lines, inside a line for any part of
  that line. Lines are compared without trailing spaces.
- ``<!-- not run: REASON -->`` on the line before a block keeps a python block from running
  (a fragment, a real key or server needed); the reason is required.
- ``<!-- run with NAME="VALUE" -->`` runs a python block with every ``NAME="..."`` in it
  replaced, e.g. ``model="demo"`` for a block written for a real model.
- ``<!-- run against the demo service -->`` runs a python or shell (bash) block against a fresh
  ``python -m server`` on the demo model (``127.0.0.1:8080`` points at it); its output block
  may be a ``text`` block or one without a language. Other shell blocks never run.

The runner is strict: a marker it does not know is an error, and a block that fails or prints
something else fails its test (``test_a_broken_snippet_fails_the_runner`` proves it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_executor import AgentCommand, AgentRouter, Flow
from server.cli import ServeConfig, build_parser, build_service

from .server_helpers import service_process

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
_MARKER = re.compile(r"^[ \t]*<!--\s*(?P<text>(?:not )?run\b.*?)\s*-->[ \t]*$")
_REPLACE = re.compile(r'^run with (?P<name>\w+)="(?P<value>[^"]*)"$')
_SERVICE = "run against the demo service"
_SHELL = {"bash", "sh", "shell"}
_TIMEOUT = 60
_WORKERS = 4  # the blocks wait on the demo model's pace as much as on the CPU


class SnippetError(AssertionError):
    """A block of the docs that did not run as written, or a marker the runner does not know."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a doc, with the marker before it and the output block after."""

    doc: str
    line: int
    lang: str
    code: str
    marker: str | None
    output: str | None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def runs(self) -> bool:
        """Whether the runner runs it (a marker it does not know is a :class:`SnippetError`)."""
        marker = self.marker
        if marker is not None and not (
            marker == _SERVICE or _REPLACE.match(marker) or re.match(r"not run: \S", marker)
        ):
            raise SnippetError(f"{self}: unknown marker <!-- {marker} -->")
        if self.lang == "python":
            return marker is None or not marker.startswith("not run")
        if marker == _SERVICE and self.lang in _SHELL:
            return True
        if marker is not None:
            raise SnippetError(f"{self}: <!-- {marker} --> on a {self.lang or 'plain'} block")
        return False


def blocks(text: str, doc: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order (line numbers of their opening fences)."""
    lines = text.splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        end = _closing(lines, i)
        code = "\n".join(line[len(match["indent"]) :] for line in lines[i + 1 : end])
        marker = _marker_before(lines, i)
        found.append(Block(doc, i + 1, match["lang"], code + "\n", marker, None))
        i = end + 1
    return _with_outputs(found, lines)


def _closing(lines: list[str], start: int) -> int:
    for end in range(start + 1, len(lines)):
        if lines[end].strip() == "```":
            return end
    raise SnippetError(f"line {start + 1}: a code block that is never closed")


def _marker_before(lines: list[str], start: int) -> str | None:
    before = start - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    match = _MARKER.match(lines[before]) if before >= 0 else None
    return match["text"] if match else None


def _with_outputs(found: list[Block], lines: list[str]) -> list[Block]:
    """Each runnable block with the ``text`` block (or, after a service block, any plain
    block) that directly follows it as its output; the output blocks themselves left out."""
    result: list[Block] = []
    outputs: set[int] = set()
    afters: list[Block | None] = [*found[1:], None] if found else []
    for block, after in zip(found, afters, strict=True):
        if block.line in outputs:
            continue
        if after is not None and block.lang in ("python", *_SHELL) and after.marker is None:
            between = lines[block.line : after.line - 1]
            closing = next(i for i, line in enumerate(between) if line.strip() == "```")
            adjacent = not any(line.strip() for line in between[closing + 1 :])
            wanted = ("text", "") if block.marker == _SERVICE else ("text",)
            if adjacent and after.lang in wanted:
                outputs.add(after.line)
                block = Block(
                    block.doc, block.line, block.lang, block.code, block.marker, after.code
                )
        result.append(block)
    return result


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is the output ``expected`` shows (``...``: any text; see above)."""
    pattern = []
    for line in expected.rstrip("\n").splitlines():
        line = line.rstrip()
        if line == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            parts = (re.escape(part) for part in line.split("..."))
            pattern.append("[^\n]*?".join(parts) + r"\n")
    text = "".join(line.rstrip() + "\n" for line in actual.rstrip("\n").splitlines())
    return re.fullmatch("".join(pattern), text) is not None


def _offline_environment() -> dict[str, str]:
    """This process's environment without model configuration or provider keys."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not (key.startswith("LLM_") or key.endswith(("_API_KEY", "_API_BASE", "_BASE_URL")))
    }
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_block(block: Block) -> str:
    """Run a runnable block as the convention says; its output (:class:`SnippetError` when it
    fails or prints something else than its output block shows)."""
    service = block.marker == _SERVICE
    done = _run_against_service(block) if service else _run(block, _code(block))
    problems = [
        line for line in done.stderr.splitlines() if "Traceback" in line or "Unclosed" in line
    ]
    if done.returncode != 0 or problems:
        raise SnippetError(
            f"{block}: exit status {done.returncode}; stderr:\n{done.stderr[-3000:]}"
        )
    if block.output is not None and not matches(block.output, done.stdout):
        raise SnippetError(
            f"{block}: the output differs from the block after it.\n"
            f"--- shown\n{block.output}--- printed\n{done.stdout}"
        )
    return done.stdout


def _code(block: Block) -> str:
    """The block's code, with the replacement its ``run with`` marker asks for."""
    replace = _REPLACE.match(block.marker or "")
    if replace is None:
        return block.code
    name, value = replace["name"], replace["value"]
    code, count = re.subn(rf'\b{name}="[^"]*"', f'{name}="{value}"', block.code)
    if not count:
        raise SnippetError(f'{block}: the block has no {name}="..." to replace')
    return code


def _run(block: Block, code: str) -> subprocess.CompletedProcess[str]:
    if block.lang == "python" and _Forker.usable():
        return _forker().run(block, code)
    command = [sys.executable, "-c", code] if block.lang == "python" else ["bash", "-c", code]
    try:
        return subprocess.run(
            command,
            capture_output=True,
            encoding="utf-8",
            env=_offline_environment(),
            cwd=ROOT,
            timeout=_TIMEOUT - 5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SnippetError(f"{block}: did not finish within {_TIMEOUT - 5} s") from None


# The forker: one `python -c` that has imported agent_executor (half a second of CPU, which
# every block would pay again) forks a child per block. The child is `python -c <block>` as
# far as the block can tell: a fresh `__main__`, stdout and stderr to files, stdin empty, the
# offline environment, the checkout as its working directory, and a normal interpreter exit
# (atexit, finalizers: a session left open still says so), with the exit status of `-c`.
_FORKER = r"""
import json, os, signal, sys, types

import agent_executor, agent_executor.tools.demo


jobs = {}  # pid -> job id, of the children still running
early = {}  # pid -> exit status, of a child reaped before its job was noted


def report(*words):
    # One write of a short line to a pipe is atomic; print's buffered writes are not, and a
    # signal arriving inside one of them could run the handler in the middle of a line.
    os.write(1, (" ".join(map(str, words)) + "\n").encode())


def ended(signum, frame):
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(status)
            if pid in jobs:
                report("ended", jobs.pop(pid), code)
            else:
                early[pid] = code
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def run(job):
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    for fd, path in ((1, job["out"]), (2, job["err"]), (0, os.devnull)):
        target = os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    sys.stdin = open(os.devnull)
    main = types.ModuleType("__main__")
    sys.modules["__main__"], sys.argv = main, ["-c"]
    exec(compile(job["code"], "<string>", "exec"), main.__dict__)
    raise SystemExit(0)


signal.signal(signal.SIGCHLD, ended)
for line in sys.stdin:
    job = json.loads(line)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    pid = os.fork()
    if pid == 0:
        run(job)
    jobs[pid] = job["id"]
    report("started", job["id"], pid)
    if pid in early:
        report("ended", jobs.pop(pid), early.pop(pid))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
"""


class _Forker:
    """The test's side of the forker: jobs in, each child's pid and exit status out. A forker
    that dies (a broken import of agent_executor) fails every block at once, with its stderr."""

    def __init__(self) -> None:
        self._log = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (see close)
        self._process = subprocess.Popen(
            [sys.executable, "-c", _FORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            encoding="utf-8",
            env=_offline_environment(),
            cwd=ROOT,
        )
        self._lock = threading.Lock()
        self._jobs = 0
        self._pids: dict[int, Future[int]] = {}
        self._statuses: dict[int, Future[int]] = {}
        self._dead: str | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @staticmethod
    def usable() -> bool:
        return hasattr(os, "fork") and hasattr(signal, "pthread_sigmask")

    def run(self, block: Block, code: str) -> subprocess.CompletedProcess[str]:
        """``code`` run in a child, as ``python -c`` would (its exit status and output)."""
        with tempfile.TemporaryDirectory() as folder:
            out, err = Path(folder, "out"), Path(folder, "err")
            out.touch()
            err.touch()
            job, pid, status = self._submit(block, code, out, err)
            try:
                returncode = status.result(timeout=_TIMEOUT - 5)
            except FutureTimeout:
                os.kill(pid.result(timeout=10), signal.SIGKILL)
                status.result(timeout=10)
                raise SnippetError(f"{block}: did not finish within {_TIMEOUT - 5} s") from None
            except SnippetError as exc:  # the forker died
                raise SnippetError(f"{block}: {exc}") from None
            finally:
                with self._lock:
                    del self._pids[job], self._statuses[job]
            return subprocess.CompletedProcess(
                ["-c", code], returncode, out.read_text("utf-8"), err.read_text("utf-8")
            )

    def _submit(
        self, block: Block, code: str, out: Path, err: Path
    ) -> tuple[int, Future[int], Future[int]]:
        pid, status = Future[int](), Future[int]()
        with self._lock:
            if self._dead is not None:
                raise SnippetError(f"{block}: {self._dead}")
            self._jobs += 1
            job = self._jobs
            self._pids[job], self._statuses[job] = pid, status
            line = json.dumps({"id": job, "code": code, "out": str(out), "err": str(err)})
            assert self._process.stdin is not None
            try:
                self._process.stdin.write(line + "\n")
                self._process.stdin.flush()
            except OSError:
                pass  # it died: the reader fails the job
        return job, pid, status

    def _read(self) -> None:
        """The forker's reports: ``started <job> <pid>``, ``ended <job> <exit status>``;
        at its end, every job still waiting fails."""
        assert self._process.stdout is not None
        wrong = ""
        for line in self._process.stdout:
            words = line.split()
            if len(words) != 3 or words[0] not in ("started", "ended"):
                wrong = f"the forker wrote {line!r}; "
                self._process.kill()
                break
            what, job, number = words
            with self._lock:
                futures = self._pids if what == "started" else self._statuses
                future = futures.get(int(job))  # gone: its test gave up on it
                if future is not None and not future.done():
                    future.set_result(int(number))
        self._log.seek(0)
        problem = SnippetError(
            f"{wrong}the forker ended (exit status {self._process.wait()}): "
            f"{self._log.read()[-3000:]}"
        )
        with self._lock:
            self._dead = str(problem)
            for future in [*self._pids.values(), *self._statuses.values()]:
                if not future.done():
                    future.set_exception(problem)

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(10)
        self._reader.join(10)
        assert self._process.stdout is not None
        self._process.stdout.close()
        self._log.close()


_forkers: list[_Forker] = []
_FORKER_LOCK = threading.Lock()


def _forker() -> _Forker:
    """The module's forker, started at its first use (closed by ``forker_closed``)."""
    with _FORKER_LOCK:
        if not _forkers:
            _forkers.append(_Forker())
        return _forkers[0]


@pytest.fixture(scope="module", autouse=True)
def forker_closed() -> Iterator[None]:
    yield
    with _FORKER_LOCK:
        while _forkers:
            _forkers.pop().close()


def _run_against_service(block: Block) -> subprocess.CompletedProcess[str]:
    if "curl " in block.code and shutil.which("curl") is None:
        pytest.skip(f"{block} needs curl")
    with service_process(env={"LLM_MODEL": "demo"}) as (_, base):
        return _run(block, block.code.replace("http://127.0.0.1:8080", base))


def _all_blocks() -> list[Block]:
    return [
        b for doc in DOCS for b in blocks(doc.read_text("utf-8"), doc.relative_to(ROOT).as_posix())
    ]


RUNNABLE = [block for block in _all_blocks() if block.runs]


@pytest.fixture(scope="module")
def started(request: pytest.FixtureRequest) -> Iterator[dict[Block, Future[str]]]:
    """The selected blocks, started a few at a time as the tests begin (one after another
    they would take long: the demo model writes at a reader's pace); each test waits for its
    own."""
    selected = [
        item.callspec.params["block"]
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_the_block_runs_as_written"
    ]
    pool = ThreadPoolExecutor(max_workers=_WORKERS)
    try:
        yield {block: pool.submit(run_block, block) for block in selected}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_the_block_runs_as_written(block: Block, started: dict[Block, Future[str]]) -> None:
    """``run_block`` raises :class:`SnippetError` (an ``AssertionError``) on a failing exit
    status, a traceback or an unclosed resource; what it printed is checked here."""
    printed = started[block].result()
    assert block.output is None or matches(block.output, printed), (block.output, printed)


def test_the_docs_hold_runnable_blocks_and_every_skipped_one_says_why() -> None:
    every = _all_blocks()
    skipped = [b for b in every if b.lang == "python" and not b.runs]

    assert len(RUNNABLE) >= 50, [str(b) for b in RUNNABLE]
    assert sum(b.output is not None for b in RUNNABLE) >= 25
    assert all(re.fullmatch(r"not run: \S.*", b.marker or "") for b in skipped)


BROKEN = """\
# A guide

```python
print("one")
```

```text
one
```

<!-- run with model="demo" -->
```python
model="openai/gpt-4o-mini"
print(model)
```

```text
demo
```

```python
import sys

print("partly")
sys.exit(1 / 0)
```

```python
print("the weather is fine")
```

```text
the weather is ... today
```

```python
import asyncio

import aiohttp


async def main() -> aiohttp.ClientSession:
    return aiohttp.ClientSession()  # never closed


session = asyncio.run(main())
```
"""


def test_a_broken_snippet_fails_the_runner() -> None:
    good, replaced, failing, differing, leaking = blocks(BROKEN, "guide.md")

    assert (good.line, good.output, replaced.output) == (3, "one\n", "demo\n")
    assert run_block(good) == "one\n" and run_block(replaced) == "demo\n"
    with pytest.raises(SnippetError, match=r"guide\.md:21: exit status 1;(.|\n)*ZeroDivision"):
        run_block(failing)
    with pytest.raises(SnippetError, match=r"guide\.md:28: the output differs"):
        run_block(differing)
    with pytest.raises(SnippetError, match=r"guide\.md:36: exit status 0;(.|\n)*Unclosed client"):
        run_block(leaking)


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ("<!-- not run -->\n```python\n```\n", "unknown marker <!-- not run -->"),
        ("<!-- run please -->\n```python\n```\n", "unknown marker"),
        ("<!-- run against the demo service -->\n```json\n{}\n```\n", "on a json block"),
        ("```python\nprint(1)\n", "never closed"),
    ],
)
def test_a_marker_the_runner_does_not_know_is_an_error(doc: str, problem: str) -> None:
    with pytest.raises(SnippetError, match=problem):
        [block.runs for block in blocks(doc, "guide.md")]


@pytest.mark.parametrize(
    ("shown", "printed", "same"),
    [
        ("a\nb\n", "a\nb\n", True),
        ("a  \nb", "a\nb  \n\n", True),
        ("a\n...\nd\n", "a\nb\nc\nd\n", True),
        ("a\n...\nd\n", "a\nd\n", True),
        ("id: ...:7\n", "id: Xy_1:7\n", True),
        ("id: ...:7\n", "id: Xy\n1:7\n", False),
        ("a\nb\n", "a\nc\n", False),
        ("a\n", "a\nb\n", False),
    ],
)
def test_the_shown_output_is_matched_line_by_line_with_ellipses(
    shown: str, printed: str, same: bool
) -> None:
    assert matches(shown, printed) is same


ORDERS = """\
from agent_executor import tool


@tool
def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up.\"\"\"
    return f"order {order_id}: paid"
"""


def _block_of(doc: str, lang: str, holding: str) -> str:
    (code,) = [
        b.code
        for b in blocks((ROOT / doc).read_text("utf-8"), doc)
        if b.lang == lang and holding in b.code
    ]
    return code


async def test_the_orchestration_guides_flows_file_serves_with_its_agents_file(
    tmp_path: Path,
) -> None:
    """``agent-executor serve --agents agents.json --tools orders --flows flows.yaml`` with the
    guide's two files builds (the setting gives ``billing`` a tool it has already) and serves
    the flow without changing the agent."""
    (tmp_path / "agents.json").write_text(_block_of("docs/orchestration.md", "json", '"groups"'))
    (tmp_path / "flows.yaml").write_text(_block_of("docs/orchestration.md", "yaml", "flows:"))
    (tmp_path / "orders.py").write_text(ORDERS)
    flags = ["--agents", "agents.json", "--tools", "orders.py", "--flows", "flows.yaml"]
    args = build_parser().parse_args(
        ["serve", *(str(tmp_path / f) if "." in f else f for f in flags)]
    )

    router = build_service(ServeConfig.from_args(args, {"MODERATOR_KEY": "k"})).agents

    assert isinstance(router, AgentRouter)
    flow = router.agents["helpdesk"]
    assert isinstance(flow, Flow) and flow.given("refund") == {}
    assert sorted(router.agents["billing"].tools) == ["lookup_order", "transfer_to_triage"]
    try:
        result = await flow.execute(AgentCommand(user_prompt="Please refund order 42."))
    finally:
        await router.aclose()
    assert result.success, result.error
