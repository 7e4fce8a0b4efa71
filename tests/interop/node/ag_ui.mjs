// AG-UI's own client, @ag-ui/client's HttpAgent, drives the service's POST /api/ag-ui
// (tests/interop/test_ag_ui_client.py).
//
//   node ag_ui.mjs <scenario> <service-url>
//
// Prints ONE JSON line: what the scenario observed through the client (the events its
// subscribers saw, the agent's messages, a run's outcome), the client's console `warnings`
// (it warns about events it had to strip or translate), and `http`: the requests it sent
// (body, status). The client's own pipeline checks every event (schema, then its verifier:
// order, open and closed messages and calls); a violation fails the run, so a scenario that
// ends without `error` saw a stream the client accepts. Exits 1 when the scenario threw.
import { HttpAgent } from "@ag-ui/client";

const [scenario, base] = process.argv.slice(2);
const warnings = [];
const errors = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));
console.error = (...args) => errors.push(args.map(String).join(" "));

const http = [];
const recordingFetch = async (url, init) => {
  const sent = { body: JSON.parse(init.body) };
  http.push(sent);
  const response = await fetch(url, init);
  sent.status = response.status;
  return response;
};

// The client tool: the app runs it when a run ends on its call, then runs the agent again.
const REFUND = {
  name: "refund",
  description: "Refund an amount to the customer.",
  parameters: {
    type: "object",
    properties: { amount: { type: "number" } },
    required: ["amount"],
  },
};

function agent(threadId, path = "/api/ag-ui") {
  return new HttpAgent({ url: `${base}${path}`, threadId, fetch: recordingFetch });
}

// A subscriber that keeps what the app would see of a run.
function watcher() {
  const seen = { events: [], finished: null, failed: null, toolResults: [], calls: [] };
  seen.subscriber = {
    onEvent: ({ event }) => {
      seen.events.push(event.type);
    },
    onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
      seen.calls.push({ id: event.toolCallId, name: toolCallName, args: toolCallArgs });
    },
    onToolCallResultEvent: ({ event }) => {
      seen.toolResults.push({ id: event.toolCallId, content: event.content });
    },
    onRunFinishedEvent: ({ outcome, pendingToolCallIds }) => {
      seen.finished = { outcome, pendingToolCallIds };
    },
    onRunErrorEvent: ({ event }) => {
      seen.failed = { code: event.code, message: event.message };
    },
  };
  return seen;
}

function transcript(messages) {
  return messages.map((m) => ({
    role: m.role,
    content: m.content ?? null,
    toolCalls: (m.toolCalls ?? []).map((c) => ({
      id: c.id,
      name: c.function.name,
      args: c.function.arguments,
    })),
    toolCallId: m.toolCallId ?? null,
  }));
}

async function run(client, params, seen) {
  const { newMessages } = await client.runAgent(params, seen.subscriber);
  const { subscriber, ...rest } = seen;
  return { ...rest, newMessages: transcript(newMessages) };
}

const SCENARIOS = {
  // A plain answer, streamed as one message.
  text: async () => {
    const client = agent("thread-text");
    client.addMessage({ id: "u1", role: "user", content: "Hello there" });
    return run(client, { runId: "run-text" }, watcher());
  },
  // The service's own tool: its call and its result, then the answer.
  "server-tool": async () => {
    const client = agent("thread-server-tool");
    client.addMessage({ id: "u1", role: "user", content: 'lookup_order({"order_id": "42"})' });
    return run(client, { runId: "run-server-tool" }, watcher());
  },
  // A client tool beside the service's tool in one turn: the run ends after the client
  // tool's TOOL_CALL_END; the app runs it, adds its result, and runs the agent again.
  "client-tool": async () => {
    const client = agent("thread-client-tool");
    client.addMessage({
      id: "u1",
      role: "user",
      content: 'lookup_order({"order_id": "42"}) then refund({"amount": 5})',
    });
    const first = await run(client, { runId: "run-1", tools: [REFUND] }, watcher());
    const refunds = [];
    for (const id of first.finished.pendingToolCallIds) {
      const call = first.calls.find((c) => c.id === id);
      refunds.push(call.args.amount);
      const content = `refunded ${call.args.amount}`;
      client.addMessage({ id: `result-${id}`, role: "tool", toolCallId: id, content });
    }
    const second = await run(client, { runId: "run-2", tools: [REFUND] }, watcher());
    return { first, refunds, second, messages: transcript(client.messages) };
  },
  // The model's connection drops mid-answer: RUN_ERROR after the text began.
  "run-error": async () => {
    const client = agent("thread-error");
    client.addMessage({ id: "u1", role: "user", content: "Hello there" });
    const seen = watcher();
    try {
      await client.runAgent({ runId: "run-error" }, seen.subscriber);
    } catch (error) {
      seen.rejected = { message: error.message };
    }
    const { subscriber, ...rest } = seen;
    return rest;
  },
  // An agent the service does not have: refused before any event, with the HTTP status and
  // the service's JSON error, which the client raises.
  refused: async () => {
    const client = agent("thread-refused", "/api/ag-ui/no-such-agent");
    client.addMessage({ id: "u1", role: "user", content: "Hello there" });
    const seen = watcher();
    try {
      await client.runAgent({ runId: "run-refused" }, seen.subscriber);
    } catch (error) {
      return { events: seen.events, caught: { status: error.status, payload: error.payload } };
    }
    throw new Error("the unknown agent answered");
  },
};

try {
  const observed = await SCENARIOS[scenario]();
  console.log(JSON.stringify({ ...observed, warnings, errors, http }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error), warnings, errors, http }));
  process.exitCode = 1;
}
