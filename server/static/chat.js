/*
 * The built-in chat page: streams POST /api/chat/stream (or a GET EventSource) in "json" event
 * mode and shows every event of the stream (docs/sse-protocol.md). No build step, no network
 * beyond this service. See docs/chat-page.md.
 */
"use strict";
(() => {
  // The endpoints, as index.html declares them (relative, so the page works under a prefix).
  const STREAM_URL = document.body.dataset.streamUrl || "api/chat/stream";
  const TOOL_RESULT_URL = document.body.dataset.toolResultUrl || "api/chat/tool-result";
  const RUNS_URL = document.body.dataset.runsUrl || "api/runs";
  const MODELS_URL = document.body.dataset.modelsUrl || "v1/models";
  const SESSION_KEY = "agent-executor.session_id";
  /** The reply in progress (its run and the user's message), so a reload shows the rest. */
  const INFLIGHT_KEY = "agent-executor.inflight";
  const API_KEY_KEY = "agent-executor.api_key";
  const ASK_USER = "ask_user"; // the built-in tool with which the model asks the person
  /** The event types an EventSource listens for ("error" and "done" are handled apart). */
  const EVENT_TYPES = ["message", "reasoning", "tool_start", "tool_end", "tool_call",
    "approval_required", "agent_selected", "nested"];
  const RESULT_LIMIT = 4000; // characters of a tool result shown in its record

  /** Tools this page runs itself: declared with every (POST) request, answered from here. */
  const CLIENT_TOOLS = [
    {
      name: "get_browser_timezone",
      description: "The time zone of the user's browser (IANA name).",
      parameters: { type: "object", properties: {} },
    },
  ];
  const CLIENT_TOOL_RUNNERS = {
    get_browser_timezone() {
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (typeof zone !== "string" || zone === "") throw new Error("the browser did not say");
      return { result: zone, note: `\u{1F9ED} browser time zone: ${zone}` };
    },
  };

  const byId = (id) => document.getElementById(id);
  const form = byId("composer");
  const input = byId("input");
  const sendButton = byId("send");
  const stopButton = byId("stop");
  const messages = byId("messages");
  const useEventSource = byId("use-eventsource");
  const apiKeyInput = byId("api-key");
  const agentSelect = byId("agent");
  const agentNote = byId("agent-note");

  /** Debug trace: every event received, as {type, data} (data parsed from JSON). */
  window.__chatEvents = [];
  /** Debug trace: every answer to a tool call, as {call_id, tool, body, status, error}. */
  window.__toolAnswers = [];

  // ---- storage (sessionStorage: this tab only, gone when it closes) -------------------------
  function readStored(key) {
    try { return sessionStorage.getItem(key); } catch (_) { return null; } // storage disabled
  }

  function writeStored(key, value) {
    try {
      if (value) sessionStorage.setItem(key, value);
      else sessionStorage.removeItem(key);
    } catch (_) { /* storage disabled: the value lives as long as the page */ }
  }

  function newSessionId() {
    if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
    // crypto.randomUUID needs a secure context (https or localhost); build a v4 UUID otherwise.
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function loadSessionId() {
    let id = readStored(SESSION_KEY);
    if (!id) {
      id = newSessionId();
      writeStored(SESSION_KEY, id);
    }
    return id;
  }

  const sessionId = loadSessionId();

  // ---- the API key: typed once, kept for this tab, sent as a Bearer token -----------------
  apiKeyInput.value = readStored(API_KEY_KEY) ?? "";
  apiKeyInput.addEventListener("input", () => {
    apiKeyInput.removeAttribute("aria-invalid");
    writeStored(API_KEY_KEY, apiKeyInput.value.trim());
  });

  function apiKey() { return apiKeyInput.value.trim(); }

  /** What every request to /api/* carries (the stream, its resumes and its tool results). */
  function authHeaders() {
    const key = apiKey();
    return key ? { Authorization: `Bearer ${key}` } : {};
  }

  /** A 401 in words a person can act on. */
  function keyProblem(detail) {
    apiKeyInput.setAttribute("aria-invalid", "true");
    if (apiKey() === "") {
      return "This service needs an API key: enter it in the \u201CAPI key\u201D field at the "
        + "top of the page, then send again.";
    }
    return `The service did not accept this API key (${detail}): check the \u201CAPI key\u201D `
      + "field at the top of the page.";
  }

  // ---- the agent picker: the service's agents, groups and flows; ?agent=NAME picks one ------
  /** The agent asked for in the page's address (?agent=NAME), "" for none. */
  const agentInAddress = new URLSearchParams(window.location.search).get("agent") ?? "";

  /** The chosen agent, "" for the service's default (its default agent, or its router). */
  function chosenAgent() { return agentSelect.value; }

  /** The chat request's fields that name the agent: none for the default. */
  function agentField(agent) { return agent ? { agent } : {}; }

  function showAgents(names, wanted) {
    const options = [new Option("default", "")];
    for (const name of names) options.push(new Option(name, name));
    if (wanted !== "" && !names.includes(wanted)) {
      const unknown = new Option(`${wanted} (not listed)`, wanted);
      unknown.dataset.unlisted = "true";
      options.push(unknown);
    }
    agentSelect.replaceChildren(...options);
    agentSelect.value = wanted;
  }

  let agentsLoad = 0; // the latest listing asked for; an older answer is not shown
  /** List what the service serves (GET v1/models; "default" is the empty choice). With API
   * keys the listing needs one: until the key is given, only the default and ?agent= show. */
  async function loadAgents() {
    const load = ++agentsLoad;
    const wanted = agentSelect.value || agentInAddress;
    let names = null;
    let problem = "";
    try {
      const headers = { ...authHeaders(), Accept: "application/json" };
      const response = await fetch(MODELS_URL, { headers });
      if (response.ok) {
        const listed = (await response.json())?.data;
        names = (Array.isArray(listed) ? listed : [])
          .map((model) => model?.id)
          .filter((id) => typeof id === "string" && id !== "" && id !== "default");
      } else {
        problem = response.status === 401
          ? "enter the API key to list the agents"
          : `the agents could not be listed (HTTP ${response.status})`;
      }
    } catch (err) {
      problem = `the agents could not be listed: ${describe(err)}`;
    }
    if (load !== agentsLoad) return;
    showAgents(names ?? [], wanted);
    agentSelect.dataset.state = names === null ? "unlisted" : "listed";
    agentNote.textContent = problem;
    agentNote.hidden = problem === "";
  }

  /** The address says which agent is chosen, so a reload or a shared link keeps it. */
  function rememberAgent() {
    const url = new URL(window.location.href);
    if (chosenAgent()) url.searchParams.set("agent", chosenAgent());
    else url.searchParams.delete("agent");
    window.history.replaceState(window.history.state, "", url);
  }

  showAgents([], agentInAddress);
  agentSelect.addEventListener("change", rememberAgent);
  apiKeyInput.addEventListener("change", () => { loadAgents(); });

  // ---- SSE parser (WHATWG event-stream rules) ------------------------------------------
  window.__createSSEParser = (onEvent) => createSSEParser(onEvent); // for the browser tests

  /**
   * Feed it bytes with push(); calls onEvent(type, data, lastEventId) per complete event.
   * Lines end in LF, CRLF or CR (also when a CRLF is split between chunks); several data:
   * lines are joined with LF; lines starting with ":" are comments; an event is only
   * dispatched at a blank line, so an event cut off by the end of the stream is dropped.
   */
  function createSSEParser(onEvent) {
    const decoder = new TextDecoder("utf-8"); // also drops a leading BOM
    let buffer = "";
    let skipLF = false; // the previous chunk ended in CR: a LF starting this one belongs to it
    let data = "";
    let type = "";
    let lastEventId = "";

    function processLine(line) {
      if (line === "") return dispatch();
      if (line[0] === ":") return; // comment (e.g. the heartbeat)
      const colon = line.indexOf(":");
      let field = line;
      let value = "";
      if (colon !== -1) {
        field = line.slice(0, colon);
        value = line.slice(colon + 1);
        if (value[0] === " ") value = value.slice(1);
      }
      if (field === "event") type = value;
      else if (field === "data") data += value + "\n";
      else if (field === "id") { if (!value.includes("\0")) lastEventId = value; }
      // "retry" and unknown fields are ignored
    }

    function dispatch() {
      if (data === "") { type = ""; return; }
      const payload = data.endsWith("\n") ? data.slice(0, -1) : data;
      const eventType = type || "message";
      data = "";
      type = "";
      onEvent(eventType, payload, lastEventId);
    }

    function feedText(text) {
      if (text === "") return;
      if (skipLF && text[0] === "\n") text = text.slice(1);
      skipLF = false;
      buffer += text;
      const lineEnd = /\r\n|\r|\n/g;
      let start = 0;
      let match;
      while ((match = lineEnd.exec(buffer)) !== null) {
        if (match[0] === "\r" && lineEnd.lastIndex === buffer.length) skipLF = true;
        processLine(buffer.slice(start, match.index));
        start = lineEnd.lastIndex;
      }
      buffer = buffer.slice(start);
    }

    return {
      push(bytes) { feedText(decoder.decode(bytes, { stream: true })); },
      end() { feedText(decoder.decode()); buffer = ""; data = ""; type = ""; },
    };
  }

  // ---- Markdown, sanitised --------------------------------------------------------------
  const renderMarkdown = createMarkdownRenderer();

  /**
   * A function from Markdown source to a sanitised DocumentFragment, or null when the vendored
   * libraries did not load (the page then shows model text as plain text).
   *
   * Two layers: marked renders raw HTML found in the source as text (escaped), not as markup;
   * then DOMPurify cleans whatever HTML marked produced (script, event handlers, javascript:
   * and other unsafe URLs, forms, styles, SVG/MathML) and hands back DOM nodes, so no string
   * of model text is ever assigned to innerHTML.
   */
  function createMarkdownRenderer() {
    const lib = window.marked;
    const purify = window.DOMPurify;
    if (!lib || typeof lib.Marked !== "function" || !purify || !purify.isSupported) return null;
    const escape = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    const parser = new lib.Marked({
      gfm: true,
      async: false,
      renderer: {
        html: (token) => (token.block ? `<p>${escape(token.text)}</p>` : escape(token.text)),
      },
    });
    purify.addHook("afterSanitizeAttributes", (node) => {
      if (node.tagName === "A" && node.hasAttribute("href")) {
        node.setAttribute("target", "_blank"); // never replace this page (and its transcript)
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
    });
    const config = {
      USE_PROFILES: { html: true },
      FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option"],
      FORBID_ATTR: ["style", "class", "id"], // model text cannot look like the page's own parts
      RETURN_DOM_FRAGMENT: true,
    };
    return (source) => purify.sanitize(parser.parse(source), config);
  }

  // ---- small DOM helpers --------------------------------------------------------------------
  /** An element with a class and text content (always text, never HTML). */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function button(label, className) {
    const node = el("button", className, label);
    node.type = "button";
    return node;
  }

  /** JSON shown to a person, indented (also a string that holds JSON); other text as it is. */
  function shown(value) {
    if (typeof value === "string") {
      if (!/^\s*[[{]/.test(value)) return value;
      try { value = JSON.parse(value); } catch (_) { return value; }
    }
    try { return JSON.stringify(value ?? null, null, 2); } catch (_) { return String(value); }
  }

  function clipped(text) {
    return text.length > RESULT_LIMIT ? `${text.slice(0, RESULT_LIMIT)}\u2026` : text;
  }

  function formatDuration(ms) {
    if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
    if (ms < 1) return "<1 ms";
    if (ms < 1000) return `${Math.round(ms)} ms`;
    return `${(ms / 1000).toFixed(2)} s`;
  }

  function describe(err) { return err && err.message ? err.message : String(err); }

  function scrollToBottom() { messages.scrollTop = messages.scrollHeight; }

  function addUserBubble(text) {
    messages.append(el("div", "message user", text));
    scrollToBottom();
  }

  /** An error answer as [label, message]: "HTTP <status> <code>" and the message of the
   *  service's one error shape {"error": {"code", "message", ...}} (a run refused before its
   *  stream starts answers so too). */
  async function errorDetail(response) {
    let label = `HTTP ${response.status}`;
    let detail = response.statusText || "request failed";
    try {
      const error = (await response.json())?.error;
      if (typeof error === "string") detail = error;
      else if (error && typeof error.message === "string") {
        detail = error.message;
        if (typeof error.code === "string") label += ` ${error.code}`;
      }
    } catch (_) { /* not JSON */ }
    return [label, detail];
  }

  let busy = false;
  function setBusy(value) {
    busy = value;
    input.disabled = value;
    sendButton.hidden = value;
    stopButton.hidden = !value;
    messages.setAttribute("aria-busy", String(value)); // announce the reply once, when done
    document.body.dataset.state = value ? "streaming" : "idle";
    updateSendButton();
    if (!value) input.focus();
  }

  function updateSendButton() {
    sendButton.disabled = busy || input.value.trim() === "";
  }

  // ---- a tool call's lasting record -------------------------------------------------------
  /** A folded <details> in the reply: the tool, its arguments, status, duration and result. */
  class ToolRecord {
    constructor(tool, callId, args) {
      this.element = el("details", "tool-call");
      this.element.dataset.callId = callId;
      this.element.dataset.tool = tool;
      this.element.dataset.status = "running";
      this.tool = tool;
      this.state = el("span", "tool-state", "running\u2026");
      this.kind = el("span", "tool-kind"); // "(agent)" once an agent's run streams in it
      const summary = el("summary");
      summary.append(el("span", "tool-name", tool), this.kind, " ", this.state);
      this.status = el("dd", "tool-status", "running");
      this.duration = el("dd", "tool-duration", "\u2013");
      this.details = el("dl");
      const argsBox = el("dd", "tool-arguments");
      argsBox.append(el("pre", null, clipped(shown(args ?? {}))));
      this.details.append(
        el("dt", null, "Arguments"), argsBox,
        el("dt", null, "Status"), this.status,
        el("dt", null, "Duration"), this.duration,
      );
      this.element.append(summary, this.details);
      this.hasResult = false;
      this.run = null; // the NestedRun of the agent this call runs, once it streams
    }

    /** The run of the agent this call runs (made at its first nested event). */
    nestedRun(agent) {
      if (this.run === null) {
        this.run = new NestedRun(agent);
        this.element.classList.add("agent-call");
        this.element.dataset.agent = agent;
        this.kind.textContent = agent === this.tool ? " (agent)" : ` (agent ${agent})`;
        const box = el("dd", "tool-run");
        box.append(this.run.element);
        this.details.append(el("dt", null, "Run"), box);
      }
      return this.run;
    }

    ended(status, durationMs) {
      const took = formatDuration(durationMs);
      this.element.dataset.status = status;
      this.element.classList.toggle("failed", status !== "success");
      this.state.textContent = took ? `${status} \u00B7 ${took}` : status;
      this.status.textContent = status;
      this.duration.textContent = took || "\u2013";
    }

    /** The reply ended while the call had not: say so instead of spinning for ever. */
    interrupted(status) {
      if (this.element.dataset.status === "running") this.ended(status, undefined);
      this.run?.settle(status);
    }

    result(value) {
      if (this.hasResult) return;
      this.hasResult = true;
      const box = el("dd", "tool-result");
      box.append(el("pre", null, clipped(shown(value))));
      this.details.append(el("dt", null, "Result"), box);
    }
  }

  // ---- a call waiting for a person -----------------------------------------------------------
  /**
   * The Approve/Decline card of an approval_required event, or for ask_user the model's
   * question with an answer box. Its decision is what the resume request carries.
   */
  class ApprovalCard {
    constructor(call, onDecision) {
      this.call = call;
      this.onDecision = onDecision;
      this.decision = null; // {call_id, approved, approval_token, answer?} once decided
      this.sent = false;
      this.closed = false;
      const ask = call.tool === ASK_USER;
      this.element = el("div", ask ? "approval ask" : "approval");
      this.element.dataset.callId = call.call_id;
      this.element.dataset.tool = call.tool;
      this.element.dataset.state = "pending";
      this.element.setAttribute("role", "group");
      this.outcome = el("p", "outcome");
      if (ask) this.buildQuestion();
      else this.buildApproval();
      this.element.append(this.outcome);
    }

    buildApproval() {
      const { tool, arguments: args } = this.call;
      this.element.setAttribute("aria-label", `Approve ${tool}?`);
      const prompt = el("p", "prompt", "The assistant wants to run ");
      prompt.append(el("code", null, tool), " with:");
      const actions = el("div", "actions");
      this.approveButton = button("Approve", "approve");
      const decline = button("Decline", "decline");
      this.approveButton.addEventListener("click", () => this.decide(true, undefined, "Approved"));
      decline.addEventListener("click", () => this.decide(false, undefined, "Declined"));
      actions.append(this.approveButton, decline);
      this.element.append(prompt, el("pre", "arguments", clipped(shown(args ?? {}))), actions);
      this.controls = [this.approveButton, decline];
    }

    buildQuestion() {
      const question = this.call.arguments?.question;
      this.element.setAttribute("aria-label", "The assistant asks you");
      const text = typeof question === "string" && question ? question : "(no question given)";
      const actions = el("form", "actions");
      this.answerInput = el("input", "answer-input");
      this.answerInput.type = "text";
      this.answerInput.placeholder = "Your answer";
      this.answerInput.setAttribute("aria-label", "Your answer");
      const answer = el("button", "approve", "Answer");
      answer.type = "submit";
      const decline = button("Decline", "decline");
      actions.addEventListener("submit", (e) => {
        e.preventDefault();
        const reply = this.answerInput.value.trim();
        if (reply === "") { this.answerInput.focus(); return; }
        this.decide(true, reply, `You answered: ${reply}`);
      });
      decline.addEventListener("click", () => this.decide(false, undefined, "Declined to answer"));
      actions.append(this.answerInput, answer, decline);
      this.element.append(el("p", "asks", "The assistant asks:"), el("p", "question", text), actions);
      this.controls = [this.answerInput, answer, decline];
    }

    decide(approved, answer, outcome) {
      if (this.decision !== null || this.closed) return;
      this.decision = {
        call_id: this.call.call_id,
        approved,
        approval_token: this.call.approval_token,
        ...(answer === undefined ? {} : { answer }),
      };
      this.element.dataset.state = !approved ? "declined" : answer === undefined ? "approved" : "answered";
      this.close(outcome);
      this.onDecision();
    }

    /** No decision will be sent (a new message was sent instead): the server drops the run. */
    drop() {
      if (this.sent || this.closed) return;
      this.element.dataset.state = "dropped";
      this.close("Not decided: a new message was sent instead.");
    }

    close(outcome) {
      this.closed = true;
      this.outcome.textContent = outcome;
      for (const control of this.controls) control.disabled = true;
    }

    focus() { (this.answerInput ?? this.approveButton).focus(); }
  }

  // ---- one agent's run as it streams: text, tool records, agents taking over ---------------
  /**
   * The transcript of a run: the model's text (Markdown), tool records, notes and errors, in
   * the order they happen. The reply bubble is one (Turn); the run of an agent used as a tool
   * is another (NestedRun), inside that call's record, and may hold further ones.
   */
  class Flow {
    constructor(box, flow, speaker) {
      this.box = box; // the outer element: reasoning goes in it, above the flow
      this.flow = flow; // where text, records, notes and errors go
      this.speaker = speaker; // the element naming who speaks (null: the box's data-speaker)
      this.agents = []; // the agents that spoke, in order (empty: not told)
      this.agent = ""; // the agent speaking now ("" when the stream did not say)
      this.reasoning = null; // {details, summary, text} once the model reasons
      this.segment = null; // {element, source, rendered}: where text goes until a tool or card
      this.frame = 0;
      this.records = new Map(); // call_id -> ToolRecord
      this.failed = false;
      this.hasText = false;
    }

    // -- who speaks --
    /** agent_selected: a router's pick names the speaker; a handoff marks where it changes. */
    agentSelected(obj) {
      const agent = typeof obj.agent === "string" ? obj.agent : "";
      if (agent === "" || agent === this.agent) return;
      const detail = typeof obj.detail === "string" ? obj.detail : "";
      if (obj.selected_by === "handoff" || this.flow.childElementCount > 0) {
        const from = /^from (.+)$/.exec(detail)?.[1];
        if (this.agents.length === 0 && from) this.spoke(from); // who spoke until now
        const divider = el("div", "handoff", "\u2192 ");
        divider.dataset.agent = agent;
        divider.setAttribute("role", "note");
        divider.append(el("span", "agent", agent));
        if (detail) divider.append(el("span", "handoff-detail", ` (${detail})`));
        this.append(divider);
      }
      this.spoke(agent);
    }

    spoke(agent) {
      this.agent = agent;
      this.agents.push(agent);
      this.box.dataset.agent = agent;
      this.box.dataset.speaker = this.agents.join(" \u2192 "); // "triage → billing"
      if (this.speaker === null) return;
      this.speaker.replaceChildren();
      this.agents.forEach((name, i) => {
        if (i > 0) this.speaker.append(" \u2192 ");
        this.speaker.append(el("span", "agent", name));
      });
    }

    // -- text, rendered as sanitised Markdown at most once per frame --
    text(chunk) {
      if (chunk === "") return;
      this.reasoningPaused();
      if (this.segment === null) {
        this.segment = { element: el("div", "text"), source: "", rendered: null };
        if (this.agent) this.segment.element.dataset.agent = this.agent;
        this.flow.append(this.segment.element);
      }
      this.segment.source += chunk;
      this.hasText = true;
      if (this.frame === 0) this.frame = requestAnimationFrame(() => { this.frame = 0; this.renderText(); });
    }

    renderText() {
      if (this.frame !== 0) { cancelAnimationFrame(this.frame); this.frame = 0; }
      const segment = this.segment;
      if (segment === null || segment.rendered === segment.source) return;
      segment.rendered = segment.source;
      if (renderMarkdown !== null) segment.element.replaceChildren(renderMarkdown(segment.source));
      else segment.element.textContent = segment.source;
      scrollToBottom();
    }

    /** What comes next (a tool record, a card, a note) goes after the text so far. */
    endText() {
      this.renderText();
      this.segment = null;
    }

    append(node) {
      this.endText();
      this.flow.append(node);
      scrollToBottom();
      return node;
    }

    note(text, className = "turn-note") { return this.append(el("div", className, text)); }

    /** Run a client tool the model called and POST its result (or why it failed); in a
     * nested run too: the service hands the answer to the agent that asked. */
    async answerToolCall(call) {
      const callId = call.call_id;
      const tool = typeof call.tool === "string" ? call.tool : "(unnamed tool)";
      if (typeof callId !== "string" || callId === "") return;
      let body;
      let noteText;
      const run = Object.hasOwn(CLIENT_TOOL_RUNNERS, tool) ? CLIENT_TOOL_RUNNERS[tool] : null;
      if (run === null) {
        body = { call_id: callId, error: `this page does not run ${tool}` };
        noteText = `\u26A0 the model asked for ${tool}, which this page does not run`;
      } else {
        try {
          const outcome = run(call.arguments ?? {});
          body = { call_id: callId, result: outcome.result };
          noteText = outcome.note;
        } catch (err) {
          body = { call_id: callId, error: `${tool} failed in the browser: ${describe(err)}` };
          noteText = `\u26A0 ${tool} failed in the browser: ${describe(err)}`;
        }
      }
      const note = this.note(noteText, "tool-note");
      const record = { call_id: callId, tool, body, status: null, error: null };
      window.__toolAnswers.push(record);
      let problem = null;
      try {
        const response = await fetch(TOOL_RESULT_URL, {
          method: "POST",
          headers: { ...authHeaders(), "Content-Type": "application/json" },
          body: JSON.stringify(body),
        });
        record.status = response.status;
        if (!response.ok) {
          const [label, detail] = await errorDetail(response);
          problem = [`tool result: ${label}`, detail];
        }
      } catch (err) {
        problem = ["tool result", describe(err)];
      }
      if (problem !== null) {
        record.error = problem[1];
        note.classList.add("failed");
        note.append(document.createTextNode(` (not delivered: ${problem[1]})`));
        this.problem(problem[0], problem[1]);
      }
    }

    /** A piece of the model's reasoning: into the folded block above the answer, as text. */
    reasoned(text) {
      if (this.reasoning === null) {
        const details = el("details", "reasoning"); // closed unless the user opens it
        const summary = el("summary");
        const body = el("div", "reasoning-text");
        details.append(summary, body);
        this.box.insertBefore(details, this.flow);
        this.reasoning = { details, summary, text: body };
        scrollToBottom();
      }
      const { details, summary } = this.reasoning;
      this.reasoning.text.append(document.createTextNode(text));
      if (details.dataset.state !== "thinking") {
        details.dataset.state = "thinking";
        summary.textContent = "Thinking\u2026";
      }
      if (details.open) scrollToBottom(); // the user unfolded it: follow the text
    }

    /** The model stopped reasoning (its answer began, it called a tool, or the reply ended). */
    reasoningPaused() {
      if (this.reasoning === null || this.reasoning.details.dataset.state === "done") return;
      this.reasoning.details.dataset.state = "done";
      this.reasoning.summary.textContent = "Thought";
    }

    // -- tools --
    toolStarted(tool, callId, args) {
      this.reasoningPaused();
      const record = new ToolRecord(String(tool), String(callId), args);
      this.records.set(String(callId), record);
      this.append(record.element);
    }

    toolEnded(obj) {
      const record = this.records.get(String(obj.call_id ?? obj.tool));
      if (record === undefined) return;
      record.ended(obj.status ?? "done", obj.duration_ms);
      record.run?.settle("unfinished"); // an agent's run ends with its call
    }

    /** An event of the agent run by one of this run's tool calls: shown in that call's record. */
    nested(obj) {
      const callId = typeof obj.call_id === "string" ? obj.call_id : "";
      const agent = typeof obj.agent === "string" && obj.agent ? obj.agent : "agent";
      const event = obj.event !== null && typeof obj.event === "object" ? obj.event : null;
      if (callId === "" || event === null) return;
      if (!this.records.has(callId)) this.toolStarted(agent, callId, undefined); // start missed
      this.records.get(callId).nestedRun(agent).handle(event);
    }

    /** done's tool_calls: each result into its record. */
    results(toolCalls) {
      for (const call of Array.isArray(toolCalls) ? toolCalls : []) {
        if (call && "result" in call) this.records.get(call.call_id)?.result(call.result);
      }
    }

    // -- endings --
    /** A problem shown in the transcript that does not end the reply (e.g. a lost tool result). */
    problem(code, message) {
      const box = el("div", "turn-error");
      box.setAttribute("role", "alert");
      box.append(el("span", "code", code), document.createTextNode(`: ${message}`));
      return this.append(box);
    }

    error(code, message) {
      this.failed = true;
      this.box.classList.add("failed");
      this.problem(code, message);
    }

    /** The run is over: the last text rendered, calls still running marked ``status``. */
    settle(status) {
      this.endText();
      this.reasoningPaused();
      for (const record of this.records.values()) record.interrupted(status);
    }
  }

  /**
   * The run of an agent used as a tool (``nested`` events of one call_id), inside the call's
   * record: the agent's name, its text, its own tool records (and their nested runs), its
   * errors. Its client tools' calls are answered as the reply's are; its approvals and
   * ask_user cannot pause the caller's run, so those are only noted.
   */
  class NestedRun extends Flow {
    constructor(agent) {
      const box = el("div", "nested-run");
      const speaker = el("div", "speaker");
      const flow = el("div", "run-flow");
      box.append(speaker, flow);
      super(box, flow, speaker);
      this.element = box;
      this.finished = false;
      this.spoke(agent);
    }

    handle(event) {
      if (this.finished) return;
      const text = typeof event.text === "string" ? event.text : "";
      switch (event.type) {
        case "message": this.text(text); break;
        case "reasoning": this.reasoned(text); break;
        case "tool_start": this.toolStarted(event.tool ?? "(tool)", event.call_id ?? event.tool, event.arguments); break;
        case "tool_end": this.toolEnded(event); break;
        case "nested": this.nested(event); break;
        case "agent_selected": this.agentSelected(event); break;
        case "tool_call": this.answerToolCall(event); break;
        case "approval_required":
          this.note(`\u26A0 ${this.agent} asked for ${event.tool ?? "a tool"}, which this page `
            + "cannot answer for an agent used as a tool", "tool-note failed");
          break;
        case "error": this.error(event.code ?? "error", event.message ?? ""); break;
        case "done": this.done(event); break;
        default: break;
      }
    }

    done(event) {
      this.results(event.tool_calls);
      this.finished = true;
      const reason = typeof event.finish_reason === "string" ? event.finish_reason : "";
      this.settle("unfinished");
      this.box.dataset.finishReason = reason;
      if (reason && reason !== "stop" && reason !== "error") this.note(`Ended: ${reason}`);
      else if (!this.hasText && !this.failed) this.note("(no reply)");
    }

    settle(status) {
      super.settle(status);
      this.box.classList.add("settled");
    }
  }

  // ---- one question and its reply ---------------------------------------------------------
  /**
   * Everything the assistant does for one message, in one bubble: its text (Markdown), tool
   * records, approval cards, notes and errors, in the order they happen. A run paused for
   * approval resumes into the same bubble: each stream (the first, then each resume) is a leg
   * started by begin() and ended by finish().
   */
  class Turn extends Flow {
    constructor() {
      const bubble = el("div", "message assistant");
      bubble.dataset.speaker = "Assistant"; // shown by the stylesheet; the agent's name once told
      const flow = el("div", "answer");
      bubble.append(flow);
      super(bubble, flow, null);
      this.bubble = bubble;
      messages.append(bubble);
      scrollToBottom();
      this.cards = new Map(); // call_id -> ApprovalCard
      this.finished = true;
      this.finishReason = "";
    }

    /** A stream (the first or a resume) starts feeding this turn. */
    begin() {
      this.finished = false;
      this.finishReason = "";
      this.bubble.classList.remove("done", "waiting");
      this.bubble.classList.add("streaming");
      delete this.bubble.dataset.finishReason;
    }

    handle(type, raw, id) {
      let data = raw;
      try { data = JSON.parse(raw); } catch (_) { /* text mode: keep the string */ }
      window.__chatEvents.push({ type, data });
      if (this.finished) return;
      if (typeof id === "string" && id !== "") this.seen(id);
      const obj = data !== null && typeof data === "object" ? data : {};
      switch (type) {
        case "message": this.text(typeof obj.text === "string" ? obj.text : raw); break;
        case "reasoning": this.reasoned(typeof obj.text === "string" ? obj.text : raw); break;
        case "tool_start": this.toolStarted(obj.tool ?? raw, obj.call_id ?? obj.tool ?? raw, obj.arguments); break;
        case "tool_end": this.toolEnded("tool" in obj ? obj : { tool: raw }); break;
        case "tool_call": this.answerToolCall(obj); break;
        case "approval_required": this.approvalRequired(obj); break;
        case "agent_selected": this.agentSelected(obj); break;
        case "nested": this.nested(obj); break;
        case "error": this.error(obj.code ?? "error", obj.message ?? raw); break;
        case "done": this.done(obj); break;
        default: break; // unknown event types are not shown
      }
    }

    // -- approvals and ask_user --
    approvalRequired(call) {
      if (typeof call.call_id !== "string" || typeof call.approval_token !== "string") return;
      if (this.cards.has(call.call_id)) return;
      this.reasoningPaused();
      const card = new ApprovalCard(call, () => this.decided());
      this.cards.set(call.call_id, card);
      this.append(card.element);
    }

    /** Once the paused stream has ended and every pending call is decided: send them back.
     * (Called on each decision, and by runStream when a stream of this turn is over.) */
    decided() {
      if (active !== null && active.turn === this) return; // its stream is still open
      if (this.finishReason !== "waiting_for_approval") return;
      const pending = [...this.cards.values()].filter((card) => !card.sent && !card.closed);
      const decided = [...this.cards.values()].filter((card) => !card.sent && card.decision);
      if (pending.length > 0 || decided.length === 0) return;
      for (const card of decided) card.sent = true;
      const approvals = decided.map((card) => card.decision);
      const body = { session_id: sessionId, events: "json", tools: CLIENT_TOOLS, approvals };
      runStream(this, { ...body, ...agentField(this.requestedAgent) }, false);
    }

    /** A new message was sent: the decisions not sent will never be. */
    dropPending() {
      for (const card of this.cards.values()) card.drop();
    }

    /** An event's id, "<run>:<position>": the run to come back to if the connection drops. */
    seen(id) {
      this.lastEventId = id;
      const run = id.slice(0, id.lastIndexOf(":"));
      if (run !== "" && this.runId !== run) {
        this.runId = run;
        writeStored(INFLIGHT_KEY, JSON.stringify({ run, message: this.message || "" }));
      }
    }

    // -- endings --
    done(obj) {
      writeStored(INFLIGHT_KEY, ""); // the run is over: a reload has nothing to come back to
      this.results(obj.tool_calls);
      for (const call of Array.isArray(obj.pending_approvals) ? obj.pending_approvals : []) {
        this.approvalRequired(call ?? {}); // in case an approval_required event was missed
      }
      this.finish(typeof obj.finish_reason === "string" ? obj.finish_reason : "");
    }

    /** The stream is over: settle the bubble and let the user type (or decide) again. */
    finish(finishReason) {
      if (this.finished) return;
      this.finished = true;
      this.finishReason = finishReason;
      this.settle(finishReason === "stopped" ? "stopped" : "unfinished");
      const waiting = finishReason === "waiting_for_approval";
      this.bubble.classList.remove("streaming");
      this.bubble.classList.add(waiting ? "waiting" : "done");
      this.bubble.dataset.finishReason = finishReason || (this.failed ? "error" : "");
      if (!waiting && !this.hasText && !this.failed && finishReason !== "stopped") {
        this.note("(no reply)");
      }
      setBusy(false);
      if (waiting) [...this.cards.values()].find((card) => !card.closed)?.focus();
    }

    fail(code, message) {
      if (this.finished) return;
      this.error(code, message);
      this.finish("error");
    }

    /** The user pressed Stop: the stream was closed, which cancels the run on the server. */
    stopped() {
      writeStored(INFLIGHT_KEY, "");
      if (this.finished) return;
      this.bubble.classList.add("stopped");
      this.note("Stopped: the run was cancelled.", "turn-note stopped");
      this.finish("stopped");
    }
  }

  // ---- transports ----------------------------------------------------------------------
  async function streamWithFetch(turn, body, signal) {
    const response = await fetch(STREAM_URL, {
      method: "POST",
      headers: { ...authHeaders(), "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
    if (response.status !== 200) {
      const [label, detail] = await errorDetail(response);
      turn.fail(label, response.status === 401 ? keyProblem(detail) : detail);
      return;
    }
    try {
      await readEvents(turn, response);
    } catch (err) {
      if (signal.aborted || turn.finished || !turn.runId) throw err;
      await reattach(turn, signal, err); // the connection dropped mid-answer: come back
    }
  }

  /** Feed ``turn`` the events of a streamed response until it ends. */
  async function readEvents(turn, response) {
    const reader = response.body.getReader();
    const parser = createSSEParser((type, data, id) => turn.handle(type, data, id));
    for (;;) {
      const { value, done } = await reader.read(); // rejects when Stop aborts the request
      if (done) break;
      parser.push(value);
    }
    parser.end();
  }

  /**
   * Re-attach ``turn`` to its run after the connection dropped: the events after the last one
   * it got, then the rest (the service neither starts nor repeats anything). A few tries, a
   * second apart, as the network comes back.
   */
  async function reattach(turn, signal, cause) {
    for (let attempt = 0; attempt < 5 && !signal.aborted && !turn.finished; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, attempt === 0 ? 200 : 1000));
      try {
        const headers = { ...authHeaders(), Accept: "text/event-stream" };
        if (turn.lastEventId) headers["Last-Event-ID"] = turn.lastEventId;
        const response = await fetch(`${RUNS_URL}/${encodeURIComponent(turn.runId)}/events`,
          { headers, signal });
        if (response.status !== 200) break; // the run is gone (expired, unknown)
        await readEvents(turn, response);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        cause = err;
      }
    }
    throw cause;
  }

  let lastEventSource = null;
  function streamWithEventSource(turn, message, agent, signal) {
    return new Promise((resolve) => {
      // A GET query cannot declare client tools (the service reads no "tools" from it), so
      // with EventSource the model is not offered get_browser_timezone; a tool_call for a tool
      // the agent itself declares as a frontend tool is still answered.
      const query = new URLSearchParams({
        message, session_id: sessionId, events: "json", ...agentField(agent),
      });
      const source = new EventSource(`${STREAM_URL}?${query}`);
      lastEventSource = source;
      window.__chatEventSource = source; // for debugging and the browser tests
      const end = () => {
        source.close(); // closed, so it never reconnects and runs the request again
        signal.removeEventListener("abort", end);
        resolve();
      };
      signal.addEventListener("abort", end);
      for (const type of EVENT_TYPES) {
        source.addEventListener(type, (e) => turn.handle(type, e.data, e.lastEventId));
      }
      source.addEventListener("done", (e) => { end(); turn.handle("done", e.data, e.lastEventId); });
      source.addEventListener("error", (e) => {
        // Ours carries data; the browser's own (connection failed or closed) does not.
        if (typeof e.data === "string") {
          end();
          turn.handle("error", e.data, e.lastEventId);
          turn.finish("error");
          return;
        }
        // A dropped connection: EventSource reconnects by itself, with Last-Event-ID, and
        // gets the rest of the same run.
        if (source.readyState === EventSource.CONNECTING && turn.runId) return;
        end();
        turn.fail("connection", turn.hasText
          ? "the connection to the server was lost before the reply finished"
          : "could not get a reply (the server refused the request, e.g. for want of an API "
            + "key, or is unreachable)");
      });
    });
  }

  let active = null; // {turn, controller} of the stream in progress
  let lastTurn = null;

  /** One stream into ``turn`` (a new message, or a resume with decisions). */
  async function runStream(turn, body, viaEventSource) {
    const controller = new AbortController();
    active = { turn, controller };
    turn.begin();
    setBusy(true);
    try {
      if (viaEventSource) {
        await streamWithEventSource(turn, body.message, body.agent ?? "", controller.signal);
      }
      else await streamWithFetch(turn, body, controller.signal);
    } catch (err) {
      if (!controller.signal.aborted) turn.fail("network", describe(err));
    }
    if (controller.signal.aborted) turn.stopped();
    turn.fail("incomplete", "the stream ended before the reply was done");
    if (active !== null && active.controller === controller) {
      active = null;
      turn.decided(); // the user may have decided every pending call while it streamed
    }
  }

  /** Stop: the service cancels the run at once (closing the stream alone would leave it
   * a few seconds to see whether the client comes back). */
  function stop() {
    if (active === null) return;
    const { turn, controller } = active;
    if (turn.runId) {
      fetch(`${RUNS_URL}/${encodeURIComponent(turn.runId)}`,
        { method: "DELETE", headers: authHeaders() }).catch(() => {});
    }
    controller.abort();
  }

  /** A reload while a reply was streaming: show the user's message and the whole reply,
   * re-attached to the same run (nothing runs again). */
  async function resumeInflight() {
    let inflight = null;
    try { inflight = JSON.parse(readStored(INFLIGHT_KEY) || "null"); } catch (_) { /* none */ }
    if (!inflight || typeof inflight.run !== "string" || inflight.run === "") return;
    writeStored(INFLIGHT_KEY, "");
    addUserBubble(inflight.message || "");
    const turn = new Turn();
    turn.message = inflight.message || "";
    turn.runId = inflight.run;
    lastTurn = turn;
    const controller = new AbortController();
    active = { turn, controller };
    turn.begin();
    setBusy(true);
    try {
      const response = await fetch(`${RUNS_URL}/${encodeURIComponent(inflight.run)}/events`, {
        headers: { ...authHeaders(), Accept: "text/event-stream" }, signal: controller.signal,
      });
      if (response.status === 200) await readEvents(turn, response);
      else turn.fail("resume", "the reply in progress is no longer available");
    } catch (err) {
      if (!controller.signal.aborted) turn.fail("network", describe(err));
    }
    if (controller.signal.aborted) turn.stopped();
    turn.fail("incomplete", "the stream ended before the reply was done");
    if (active !== null && active.controller === controller) active = null;
  }

  async function send() {
    const message = input.value;
    if (busy || message.trim() === "") { updateSendButton(); return; }
    if (lastTurn !== null) lastTurn.dropPending();
    addUserBubble(message);
    input.value = "";
    const turn = new Turn();
    turn.message = message;
    turn.requestedAgent = chosenAgent(); // its resumes go there too, whatever is picked later
    lastTurn = turn;
    if (useEventSource.checked && apiKey() !== "") {
      turn.begin();
      turn.fail("EventSource", "an EventSource cannot send the API key: untick \u201Cuse "
        + "EventSource\u201D to send this message with it");
      return;
    }
    const body = { message, session_id: sessionId, events: "json", tools: CLIENT_TOOLS };
    await runStream(turn, { ...body, ...agentField(turn.requestedAgent) }, useEventSource.checked);
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); send(); });
  byId("settings").addEventListener("submit", (e) => e.preventDefault()); // Enter in the key box
  input.addEventListener("input", updateSendButton);
  stopButton.addEventListener("click", stop);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && busy) stop(); });
  window.addEventListener("pagehide", () => { if (lastEventSource) lastEventSource.close(); });
  setBusy(false);
  loadAgents();
  resumeInflight();
})();
