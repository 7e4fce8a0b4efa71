"""The markdown report of a run's results (printed at the end and stored in the JSON)."""

from __future__ import annotations

from typing import Any

from phases import VARIANTS
from scenario import ideal_seconds

# The import (phase "imports") each variant's client pays for.
_IMPORT_OF = {
    "floor": "aiohttp (floor)",
    "floor_orjson": "aiohttp (floor)",
    "ours": "agent_executor (ours)",
    "ours_litellm": "litellm",
    "service": "server.cli (our service)",
    "openai_sdk": "openai",
    "pydantic_ai": "pydantic_ai (+ openai model)",
    "openai_agents": "agents (OpenAI Agents SDK)",
    "langgraph": "langgraph.prebuilt + langchain_openai",
}


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "–"
    return f"{value / base:.2f}×"


def markdown(results: dict[str, Any]) -> str:
    cpu = results.get("cpu", {})
    conc = results.get("concurrency", {})
    imports = results.get("imports", {})
    lines = _summary_table(results["config"], cpu, conc, imports)
    lines += _client_notes(cpu)
    if conc:
        lines += _concurrency_table(conc)
    start = results.get("startup", {})
    if start:
        lines += _startup_table(start)
    if imports:
        lines += _imports_table(imports)
    return "\n".join(lines)


def _summary_table(
    cfg: dict[str, Any], cpu: dict[str, Any], conc: dict[str, Any], imports: dict[str, Any]
) -> list[str]:
    """One row per variant: CPU, latency, the headline concurrency level, import time."""
    floor = cpu.get("floor", {}).get("summary", {})
    headline = "1000" if "1000" in conc else (max(conc, key=int) if conc else None)
    floors = {
        "cpu": (floor.get("cpu_us_per_token") or {}).get("median"),
        "paced": (floor.get("paced_cpu_us_per_token") or {}).get("median"),
        "ttft": (floor.get("ttft_ms") or {}).get("median"),
        "turn": (floor.get("turnaround_ms") or {}).get("median"),
        "wall": (conc.get(headline, {}).get("floor") or {}).get("wall_s") if headline else None,
    }
    lines = [
        f"CPU: {cfg['n1']} vs {cfg['n2']} tokens without delay (bulk) and {cfg['paced_n1']} vs "
        f"{cfg['paced_n2']} tokens {cfg['paced_delay_ms']} ms apart (paced: one chunk per read); "
        "median [IQR]. TTFT and tool turnaround: medians, added to the floor's. "
        f"Concurrency: {cfg['conc_tokens']} tokens {cfg['conc_delay_ms']} ms apart after the "
        f"tool turn (ideal {ideal_seconds(cfg['conc_tokens'], cfg['conc_delay_ms']):.2f} s).",
        "",
        "| variant | CPU µs/token, bulk | × floor | CPU µs/token, paced | × floor "
        "| TTFT ms (added) | tool turnaround ms (added) "
        f"| {headline} streams: wall s (× floor) | failed | KiB/stream | import s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, (label, _venv) in VARIANTS.items():
        if variant not in cpu and not any(variant in lvl for lvl in conc.values()):
            continue
        h = (conc.get(headline, {}) if headline else {}).get(variant) or {}
        imp = imports.get(_IMPORT_OF[variant], {})
        lines.append(_variant_row(label, cpu.get(variant, {}), h, imp, floors))
    return lines


def _variant_row(
    label: str,
    slot: dict[str, Any],
    h: dict[str, Any],
    imp: dict[str, Any],
    floors: dict[str, float | None],
) -> str:
    s = slot.get("summary", {})
    c = s.get("cpu_us_per_token") or {}
    p = s.get("paced_cpu_us_per_token") or {}
    t = (s.get("ttft_ms") or {}).get("median")
    r = (s.get("turnaround_ms") or {}).get("median")
    floor_ttft, floor_turn = floors["ttft"], floors["turn"]
    cell_cpu = (
        f"{_fmt(c.get('median'))} [{_fmt(c.get('q1'))}–{_fmt(c.get('q3'))}]" if c else "failed"
    )
    cell_paced = f"{_fmt(p.get('median'))} [{_fmt(p.get('q1'))}–{_fmt(p.get('q3'))}]" if p else "–"
    added_t = (
        f"{_fmt(t, 2)} ({'+' if t - floor_ttft >= 0 else ''}{t - floor_ttft:.2f})"
        if t is not None and floor_ttft is not None
        else "–"
    )
    added_r = (
        f"{_fmt(r, 2)} ({'+' if r - floor_turn >= 0 else ''}{r - floor_turn:.2f})"
        if r is not None and floor_turn is not None
        else "–"
    )
    wall_cell, failed_cell, rss_cell = _headline_cells(h, floors["wall"])
    imp_cell = _fmt(imp.get("seconds"), 2) if "seconds" in imp else "–"
    if "errors" in slot and slot["errors"] and not c:
        cell_cpu = f"failed: {str(slot['errors'][0])[:60]}"
    return (
        f"| {label} | {cell_cpu} | {_ratio(c.get('median'), floors['cpu'])} | {cell_paced} "
        f"| {_ratio(p.get('median'), floors['paced'])} | {added_t} | {added_r} | {wall_cell} "
        f"| {failed_cell} | {rss_cell} | {imp_cell} |"
    )


def _headline_cells(h: dict[str, Any], floor_wall: float | None) -> tuple[str, str, str]:
    """Wall time, failures and memory per stream at the headline concurrency level."""
    if "wall_s" in h:
        unfinished = h.get("unfinished") or 0
        if unfinished:
            wall_cell = f"> {h['time_limit_s']:.0f} (≥ {_ratio(h['time_limit_s'], floor_wall)})"
        else:
            wall_cell = f"{h['wall_s']:.2f} ({_ratio(h['wall_s'], floor_wall)})"
        failed_cell = f"{h['failed']}" + (f" + {unfinished} unfinished" if unfinished else "")
        rss_cell = _fmt(h.get("rss_per_stream_kib"), 0)
    else:
        wall_cell = h.get("skipped") or h.get("error") or "–"
        failed_cell = rss_cell = "–"
    return wall_cell, failed_cell, rss_cell


def _client_notes(cpu: dict[str, Any]) -> list[str]:
    """Connection reuse and cyclic garbage of each client, and the service's client's CPU."""
    lines: list[str] = []
    notes = []
    for variant, slot in cpu.items():
        s = slot.get("summary", {})
        garbage = (s.get("cyclic_garbage_per_run") or {}).get("median")
        runs = s.get("latency_runs")
        if runs and variant != "service":  # the service's figures would be its client's
            notes.append(
                f"{variant}: {s.get('connection_reused')}/{runs} follow-ups on the same connection"
                + (
                    f", {garbage:.0f} objects of cyclic garbage per conversation"
                    if garbage is not None
                    else ""
                )
            )
    if notes:
        lines += [
            "",
            "Connection reuse and reference cycles (client process): " + "; ".join(notes) + ".",
        ]
    if "service" in cpu:
        s = cpu["service"]["summary"]
        lines += [
            "",
            "Service CPU is the service process's (model chunk in → SSE frame out); its client "
            "(plain SSE parser) used "
            f"{_fmt((s.get('client_cpu_us_per_token') or {}).get('median'))} µs/token bulk, "
            f"{_fmt((s.get('paced_client_cpu_us_per_token') or {}).get('median'))} µs/token paced.",
        ]
    return lines


def _concurrency_table(conc: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "| streams | variant | wall s | × ideal | × floor | done / failed / unfinished "
        "| client CPU s | client GC s (full GCs, longest pause ms) "
        "| service CPU s (its GCs, generation 0 / 1 / 2) "
        "| LLM server CPU s | peak RSS MiB | KiB/stream | TTFT p50 s | pool |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level, by_variant in conc.items():
        fw = (by_variant.get("floor") or {}).get("wall_s")
        for variant, res in by_variant.items():
            if "wall_s" not in res:
                reason = res.get("skipped") or res.get("error") or "failed"
                lines.append(f"| {level} | {variant} | {reason} |" + " |" * 11)
                continue
            lines.append(_concurrency_row(level, variant, res, fw))
    return lines


def _concurrency_row(level: str, variant: str, res: dict[str, Any], fw: float | None) -> str:
    service = variant == "service"
    client_cpu = res["client_cpu_s"] if service else res["cpu_s"]
    gcs = res.get("client_gc") or {}
    gc_cell = (
        f"{sum(gcs['seconds']):.2f} ({gcs['collections'][2]}, {gcs['longest_pause_s'] * 1000:.0f})"
        if gcs
        else "–"
    )
    service_cell = "–"
    if service:
        service_cell = _fmt(res["cpu_s"], 2)
        if res.get("service_gc_collections"):
            service_cell += " ({} / {} / {})".format(*res["service_gc_collections"])
    wall = f"{res['wall_s']:.2f}"
    if res["unfinished"]:
        wall = f"> {res['time_limit_s']:.0f}"
    bound = "≥ " if res["unfinished"] else ""
    return (
        f"| {level} | {variant} | {wall} "
        f"| {bound}{res['wall_s'] / res['ideal_s']:.2f}× "
        f"| {bound}{_ratio(res['wall_s'], fw)} "
        f"| {res['completed']} / {res['failed']} / {res['unfinished']} "
        f"| {client_cpu:.2f} | {gc_cell} | {service_cell} "
        f"| {_fmt(res.get('llm_server_cpu_s'), 2)} "
        f"| {res['peak_rss_kib'] / 1024:.0f} | {res['rss_per_stream_kib']:.1f} "
        f"| {_fmt(res.get('ttft_s_p50'), 2)} | {res.get('pool', '')} |"
    )


def _startup_table(start: dict[str, Any]) -> list[str]:
    lines = ["", "| start-up | ready s (median) | RSS MiB at ready |", "|---|---|---|"]
    for s in start.values():
        if isinstance(s, dict):
            med = (s.get("ready_s") or {}).get("median")
            lines.append(
                f"| `{s['command']}` | {_fmt(med, 3)} | {_fmt(s.get('rss_mib_at_ready'), 0)} |"
            )
    lines.append(
        f"\n`import server.cli` imports litellm: {start.get('litellm_imported_by_server_cli')}"
    )
    return lines


def _imports_table(imports: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "| import | s (median) | max RSS MiB | litellm imported |",
        "|---|---|---|---|",
    ]
    for label, imp in imports.items():
        if "seconds" in imp:
            lines.append(
                f"| `{label}` | {imp['seconds']:.2f} | {imp['max_rss_mib']:.0f} "
                f"| {imp['imports_litellm']} |"
            )
        else:
            lines.append(f"| `{label}` | failed | | |")
    return lines
