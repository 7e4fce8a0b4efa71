"""The Grafana dashboard, alert rules and provisioning files of ``grafana/``, checked without
Grafana or Prometheus: structure, units, variables, and that every metric and label any query
names exists in :mod:`agent_executor.metrics`.

The helpers here (query extraction, variable substitution) are also used by
``tests/test_prometheus.py``, which runs the same queries against a real Prometheus.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from agent_executor.observability.metrics import Metrics

ROOT = Path(__file__).resolve().parent.parent
GRAFANA = ROOT / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "agent-executor.json"
ALERTS = GRAFANA / "alerts.yml"
PROMETHEUS_CONFIG = GRAFANA / "prometheus.yml"
DOCS = ROOT / "docs" / "observability.md"

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
UNITS = {"s", "ms", "reqps", "ops", "cps", "percentunit", "short", "none", "currencyUSD"}
FILTER_VARIABLES = ("instance", "mode", "tool")
# Labels Prometheus adds to every scraped series, and series it makes itself.
TARGET_LABELS = frozenset({"instance", "job"})
PROMETHEUS_SERIES = {"up": TARGET_LABELS}
SEVERITIES = {"critical", "warning", "info"}
# Metrics not on the dashboard yet, and why: a panel whose query can return no data in
# tests/test_prometheus.py's service waits for the CLI to serve what records them.
NOT_ON_THE_DASHBOARD_YET: dict[str, str] = {}

# ------------------------------------------------------------------ loading


def load_dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def load_alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def all_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, rows included, with the panels of collapsed rows."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def data_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [panel for panel in all_panels(dashboard) if panel["type"] != "row"]


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(panel title, legend format, PromQL with Grafana variables) of every target."""
    return [
        (panel["title"], target.get("legendFormat", ""), target["expr"])
        for panel in data_panels(load_dashboard())
        for target in panel["targets"]
    ]


def alert_queries() -> list[tuple[str, str]]:
    """(alert name, PromQL) of every rule."""
    return [(rule["alert"], rule["expr"].strip()) for rule in load_alert_rules()]


def concrete(expr: str) -> str:
    """``expr`` with the dashboard's variables replaced as Grafana would with everything
    selected: ``$__rate_interval`` → 1m, filter variables → ``.*``, max_concurrency → 16."""
    expr = expr.replace("$__rate_interval", "1m").replace("$max_concurrency", "16")
    for name in FILTER_VARIABLES:
        expr = expr.replace(f'=~"${name}"', '=~".*"')
    assert "$" not in expr, f"unsubstituted variable in {expr!r}"
    return expr


_COMPARISON_RE = re.compile(
    r"\s*(?:==|!=|>=|<=|>|<)\s*(?:bool\s+)?-?\d+(?:\.\d+)?(?:e[+-]?\d+)?\s*$", re.I
)


def without_threshold(expr: str) -> str:
    """An alert expression without its trailing ``> 0.05``-style comparison."""
    stripped = _COMPARISON_RE.sub("", expr)
    assert stripped != expr, f"no trailing comparison in {expr!r}"
    return stripped


# ------------------------------------------------------------------ a little PromQL analysis

_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTOR_RE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"')
_GROUPING_RE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_IDENTIFIER_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {"bool", "and", "or", "unless", "offset", "inf", "nan"}
_RATE_RE = re.compile(r"\b(?:rate|irate|increase)\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)")


def _registered_metrics() -> Metrics:
    metrics = Metrics(CollectorRegistry())
    metrics.register_model("model")
    metrics.register_guard("guard", ["invalid_input"])
    metrics.register_handoff("agent")
    metrics.register_group("group", ["agent"])
    metrics.register_flow("flow", ["node"])
    return metrics


@cache
def exposed_series() -> dict[str, frozenset[str]]:
    """Sample name → label names of a fresh registry's metrics (one model, guard, handoff,
    group and flow registered, so their labelled metrics have samples too)."""
    metrics = _registered_metrics()
    labels: dict[str, set[str]] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    return {name: frozenset(names) for name, names in labels.items()}


@cache
def series_types() -> dict[str, str]:
    """Sample name → type of the family it belongs to."""
    metrics = _registered_metrics()
    return {
        sample.name: family.type
        for family in metrics.registry.collect()
        for sample in family.samples
    }


def known_series() -> dict[str, frozenset[str]]:
    """Every series a query may name, with the labels it carries once scraped."""
    known = {name: labels | TARGET_LABELS for name, labels in exposed_series().items()}
    known.update(PROMETHEUS_SERIES)
    return known


def metric_names(expr: str) -> set[str]:
    """The series names ``expr`` selects (identifiers that are not functions or keywords)."""
    text = _STRING_RE.sub('""', expr)
    text = _GROUPING_RE.sub(" ", text)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    names = set()
    for match in _IDENTIFIER_RE.finditer(text):
        if text[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group().lower() not in _KEYWORDS:
            names.add(match.group())
    return names


def _balanced(text: str, start: int) -> str:
    """The text inside the parentheses opening at ``text[start]``."""
    assert text[start] == "("
    depth = 0
    for index in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index]
    raise AssertionError(f"unbalanced parentheses in {text!r}")


def problems(expr: str) -> list[str]:
    """What is wrong with ``expr``: unknown series, unknown labels in matchers or groupings,
    rate() over a gauge, histogram_quantile() not over buckets grouped by le."""
    known = known_series()
    types = series_types()
    found: list[str] = []
    names = metric_names(expr)
    if not names and not re.fullmatch(r"vector\(\s*[\d.]+\s*\)", expr.strip()):
        found.append("selects no series")
    found += [f"unknown series {name}" for name in sorted(names - known.keys())]
    bare = _STRING_RE.sub('""', expr)
    for name, matchers in _SELECTOR_RE.findall(bare):
        for label in _MATCHER_RE.findall(matchers):
            if name in known and label not in known[name]:
                found.append(f"{name} has no label {label!r}")
    for match in _GROUPING_RE.finditer(bare):
        labels = {label.strip() for label in match.group(2).split(",") if label.strip()}
        rest = bare[match.end() :].lstrip()
        if match.group(1) in ("by", "without"):
            assert rest.startswith("("), f"write 'agg by (...) (expr)' in {expr!r}"
            body = _balanced(rest, 0)
        else:
            body = bare
        for name in sorted(metric_names(body) & known.keys()):
            for label in sorted(labels - known[name]):
                found.append(f"{name} has no label {label!r} ({match.group(0)})")
    for name in _RATE_RE.findall(bare):
        if types.get(name) == "gauge":
            found.append(f"rate()/increase() over the gauge {name}")
    for start in (m.end() - 1 for m in re.finditer(r"histogram_quantile\s*\(", bare)):
        body = _balanced(bare, start)
        if "_bucket" not in body or not re.search(r"\bby\s*\([^)]*\ble\b", body):
            found.append("histogram_quantile() needs rate(..._bucket) summed by (le, ...)")
    return found


# ------------------------------------------------------------------ dashboard


def test_the_dashboard_uses_a_current_schema_and_has_its_identity() -> None:
    dashboard = load_dashboard()

    assert dashboard["schemaVersion"] >= 39
    assert dashboard["uid"] == "agent-executor"
    assert dashboard["title"]
    assert "agent-executor" in dashboard["tags"]
    assert dashboard["time"]["from"].startswith("now-")
    assert dashboard["refresh"]
    assert "id" not in dashboard or dashboard["id"] is None  # provisioned: no database id


def test_panel_ids_are_unique_and_types_are_known() -> None:
    panels = list(all_panels(load_dashboard()))
    ids = [panel["id"] for panel in panels]

    assert len(ids) == len(set(ids))
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert {panel["type"] for panel in panels} <= {"row", "timeseries", "stat"}


def test_grid_positions_fit_24_columns_and_do_not_overlap() -> None:
    panels = list(all_panels(load_dashboard()))
    boxes = []
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0, panel["title"]
        assert grid["x"] >= 0 and grid["y"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        boxes.append((panel["title"], grid))

    for (title_a, a), (title_b, b) in itertools.combinations(boxes, 2):
        overlap = (
            a["x"] < b["x"] + b["w"]
            and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"]
            and b["y"] < a["y"] + a["h"]
        )
        assert not overlap, f"{title_a!r} overlaps {title_b!r}"


def test_rows_cover_every_area_of_the_service() -> None:
    rows = [panel["title"] for panel in load_dashboard()["panels"] if panel["type"] == "row"]

    assert rows == [
        "Traffic and outcomes",
        "Latency",
        "Saturation",
        "Tools",
        "Guards and hooks",
        "LLM",
        "Memory",
        "Orchestration",
        "Spend",
    ]


def test_every_panel_and_target_uses_the_datasource_variable() -> None:
    for panel in data_panels(load_dashboard()):
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
            assert target["expr"].strip(), panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]


def test_every_panel_has_a_unit_a_title_and_a_description() -> None:
    for panel in data_panels(load_dashboard()):
        unit = panel["fieldConfig"]["defaults"].get("unit")
        assert unit in UNITS or (unit or "").startswith("suffix:"), (panel["title"], unit)
        assert panel["title"].strip()
        assert len(panel.get("description", "")) > 20, panel["title"]


def test_template_variables_datasource_mode_tool() -> None:
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}

    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    known = known_series()
    for name in FILTER_VARIABLES:
        variable = variables[name]
        assert variable["type"] == "query"
        assert variable["datasource"] == DATASOURCE
        assert variable["multi"] is True
        assert variable["includeAll"] is True
        assert variable["allValue"] == ".*"
        match = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"])
        assert match, variable["definition"]
        assert variable["query"]["query"] == variable["definition"]
        metric, label = match.groups()
        assert label in known[metric], variable["definition"]
    assert variables["max_concurrency"]["query"].isdigit()


def test_queries_use_only_defined_variables_the_way_substitution_expects() -> None:
    defined = {v["name"] for v in load_dashboard()["templating"]["list"]}

    for title, _, expr in dashboard_queries():
        for name in re.findall(r"\$\{?(\w+)", expr):
            assert name in defined or name == "__rate_interval", (title, name)
        for name in FILTER_VARIABLES:
            # filter variables are multi-value: only a regex matcher works
            assert f'"${name}"' not in expr.replace(f'=~"${name}"', ""), (title, name)
        for window in re.findall(r"\[([^\]]+)\]", expr):
            assert window == "$__rate_interval", (title, window)
        concrete(expr)


def test_every_dashboard_query_names_existing_metrics_and_labels() -> None:
    for title, legend, expr in dashboard_queries():
        assert not problems(concrete(expr)), (title, expr, problems(concrete(expr)))
        for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
            assert re.search(rf"\bby\s*\([^)]*\b{label}\b", expr), (title, legend)


def test_the_dashboard_shows_every_metric_of_spec_section_6() -> None:
    used = set().union(*(metric_names(concrete(expr)) for _, _, expr in dashboard_queries()))
    families = {
        family.name
        for family in Metrics(CollectorRegistry()).registry.collect()
        if family.name.startswith("agent_executor_")
    }

    for family in families - NOT_ON_THE_DASHBOARD_YET.keys():
        suffixes = ("", "_total", "_bucket", "_sum", "_count")
        assert any(family + suffix in used for suffix in suffixes), family
    assert NOT_ON_THE_DASHBOARD_YET.keys() <= families  # an exception for a metric that exists
    assert not NOT_ON_THE_DASHBOARD_YET.keys() & used  # and is not on the dashboard


def test_the_problem_finder_finds_problems() -> None:
    assert problems('sum by (mode) (rate(agent_executor_requests_total{mode="x"}[1m]))') == []
    assert problems("rate(agent_executor_request_total[1m])") == [
        "unknown series agent_executor_request_total"
    ]
    assert problems('agent_executor_requests_total{tool="x"}') == [
        "agent_executor_requests_total has no label 'tool'"
    ]
    assert problems("sum by (tool) (rate(agent_executor_requests_total[1m]))") == [
        "agent_executor_requests_total has no label 'tool' (by (tool))"
    ]
    assert problems("rate(agent_executor_in_flight_requests[1m])") == [
        "rate()/increase() over the gauge agent_executor_in_flight_requests"
    ]
    assert problems(
        "histogram_quantile(0.9, sum by (mode) (rate("
        "agent_executor_request_duration_seconds_bucket[1m])))"
    ) == ["histogram_quantile() needs rate(..._bucket) summed by (le, ...)"]


# ------------------------------------------------------------------ alert rules


def test_alert_rules_have_for_severity_and_runbook_text() -> None:
    rules = load_alert_rules()
    names = [rule["alert"] for rule in rules]

    assert len(names) == len(set(names))
    assert {
        "AgentExecutorHighErrorRatio",
        "AgentExecutorTimeToFirstTokenSlow",
        "AgentExecutorSaturated",
        "AgentExecutorToolErrorRatio",
        "AgentExecutorLLMErrorBurst",
    } <= set(names)
    for rule in rules:
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        for key in ("summary", "description", "runbook"):
            assert len(rule["annotations"][key].strip()) > 20, (rule["alert"], key)


def test_saturation_alert_is_queued_for_five_minutes() -> None:
    rule = next(r for r in load_alert_rules() if r["alert"] == "AgentExecutorSaturated")

    assert rule["for"] == "5m"
    assert without_threshold(rule["expr"].strip()) == "agent_executor_queued_requests"


def test_every_alert_query_names_existing_metrics_and_labels() -> None:
    for name, expr in alert_queries():
        assert not problems(expr), (name, expr, problems(expr))
        assert "$" not in expr.replace("$labels", "").replace("$value", ""), name
        without_threshold(expr)


# ------------------------------------------------------------------ provisioning and compose


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_datasource_provisioning_points_at_the_compose_prometheus() -> None:
    document = _yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yaml")
    (source,) = document["datasources"]
    scrape_interval = _yaml(PROMETHEUS_CONFIG)["global"]["scrape_interval"]

    assert document["apiVersion"] == 1
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090"
    assert source["jsonData"]["timeInterval"] == scrape_interval


def test_the_dashboard_provisioning_loads_the_mounted_dashboards_directory() -> None:
    document = _yaml(GRAFANA / "provisioning" / "dashboards" / "agent-executor.yaml")
    (provider,) = document["providers"]
    grafana = _yaml(GRAFANA / "docker-compose.yml")["services"]["grafana"]
    mounts = dict(volume.rsplit(":", 2)[:2] for volume in grafana["volumes"] if ":" in volume)

    assert document["apiVersion"] == 1
    assert provider["type"] == "file"
    assert mounts["./dashboards"] == provider["options"]["path"]
    assert mounts["./provisioning"] == "/etc/grafana/provisioning"
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert grafana["environment"]["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"


def test_prometheus_scrapes_the_compose_service_and_loads_the_alerts() -> None:
    config = _yaml(PROMETHEUS_CONFIG)
    (job,) = config["scrape_configs"]
    prometheus = _yaml(GRAFANA / "docker-compose.yml")["services"]["prometheus"]

    assert config["rule_files"] == ["alerts.yml"]
    assert job["job_name"] == "agent-executor"  # AgentExecutorDown selects this job
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job["static_configs"] == [{"targets": ["agent-executor:8080"]}]
    assert "./alerts.yml:/etc/prometheus/alerts.yml:ro" in prometheus["volumes"]
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prometheus["volumes"]


def test_the_compose_service_is_built_from_the_repository() -> None:
    compose = _yaml(GRAFANA / "docker-compose.yml")
    service = compose["services"]["agent-executor"]
    dockerfile = (GRAFANA / "Dockerfile").read_text(encoding="utf-8")

    assert set(compose["services"]) == {"agent-executor", "prometheus", "grafana"}
    assert service["build"] == {"context": "..", "dockerfile": "grafana/Dockerfile"}
    assert service["command"][:4] == ["agent-executor", "serve", "--host", "0.0.0.0"]
    assert "8080:8080" in service["ports"]
    assert re.search(r"^RUN pip install .* \.", dockerfile, re.M)
    for path in re.findall(r"^COPY (\S+)", dockerfile, re.M):
        assert (ROOT / path).exists(), path


# ------------------------------------------------------------------ documentation


def test_the_documentation_covers_every_metric_and_alert() -> None:
    text = DOCS.read_text(encoding="utf-8")
    families = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in Metrics(CollectorRegistry()).registry.collect()
        if family.name.startswith("agent_executor_")
    }

    for name in families:
        assert f"`{name}`" in text, name
    for name, _ in alert_queries():
        assert name in text, name
    assert "docker compose -f grafana/docker-compose.yml up" in text
