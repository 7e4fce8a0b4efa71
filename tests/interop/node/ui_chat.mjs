// The AI SDK's own chat client drives the service's UI message stream, POST /api/chat/ui
// (tests/interop/test_ui_chat.py): `AbstractChat`, which React's `useChat` is built on, with
// `DefaultChatTransport` pointed at the service, in a React-free chat whose state is a plain
// object.
//
//   node ui_chat.mjs <scenario> <service-url>
//   node ui_chat.mjs validate < streams.json
//
// A scenario prints ONE JSON line: the chat's messages as the SDK built them, and `http`, the
// requests the transport sent (method, path, body, status; the body of an answer that is not
// 2xx). Exits 1 when the scenario threw (the line then has `error`).
//
// `validate` reads a JSON list of {body, message?} (a response body of /api/chat/ui, and the
// assistant message it continues) and prints, for each, the chunk types the SDK's parser read
// with `uiMessageChunkSchema` and the message `readUIMessageStream` made of them (tests of the
// dialect's exact chunks, tests/test_ui_message_stream.py).
import http from "node:http";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";
import { z } from "zod";

// The client's own tool, declared to the service in the transport's body as the SDK's docs
// declare tools: its input schema as JSON schema.
const REFUND = {
  name: "refund",
  description: "Refund an amount to the customer.",
  parameters: z.toJSONSchema(z.object({ amount: z.number() })),
};

const WAIT_MS = 15000;

// A chat's state as a plain object (React's useChat keeps it in React state); every change
// tells the listeners, so that a scenario waits for what it expects instead of sleeping.
class ChatStore {
  constructor(messages) {
    this.messages = messages;
    this.error = undefined;
    this.listeners = new Set();
    this._status = "ready";
  }
  get status() {
    return this._status;
  }
  set status(status) {
    this._status = status;
    this.changed();
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
    this.changed();
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
    this.changed();
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.with(index, this.snapshot(message));
    this.changed();
  };
  snapshot = (value) => structuredClone(value);
  changed() {
    for (const listener of [...this.listeners]) listener();
  }
}

class Chat extends AbstractChat {
  constructor({ messages = [], ...init }) {
    const store = new ChatStore(messages);
    super({ ...init, state: store });
    this.store = store;
  }

  // Resolves once `predicate(this)` holds (checked now and on every change of the state).
  until(predicate, what) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.store.listeners.delete(check);
        reject(new Error(`timed out waiting for ${what}`));
      }, WAIT_MS);
      const check = () => {
        if (!predicate(this)) return;
        clearTimeout(timer);
        this.store.listeners.delete(check);
        resolve();
      };
      this.store.listeners.add(check);
      check();
    });
  }
}

function chatOn(url, recorder, { id, body = {}, ...init } = {}) {
  const transport = new DefaultChatTransport({
    api: `${url}/api/chat/ui`,
    body,
    fetch: recorder,
  });
  return new Chat({ id, transport, ...init });
}

const toolPart = (chat, name) => chat.lastMessage?.parts.find((p) => p.type === `tool-${name}`);
const answered = (chat) =>
  chat.status === "ready" &&
  chat.lastMessage?.role === "assistant" &&
  chat.lastMessage.parts.some((p) => p.type === "text" && p.state === "done");

const SCENARIOS = {
  // A text answer.
  text: async (url, recorder) => {
    const chat = chatOn(url, recorder, { id: "ui-text" });
    await chat.sendMessage({ text: "Hello there" });
    return { status: chat.status, messages: chat.messages };
  },
  // The service runs its own tool: a tool part with its output, then the answer.
  "server-tool": async (url, recorder) => {
    const chat = chatOn(url, recorder, { id: "ui-server-tool" });
    await chat.sendMessage({ text: 'lookup_order({"order_id": "42"})' });
    return { status: chat.status, messages: chat.messages };
  },
  // The client's tool, the SDK's way: onToolCall adds its output, and the chat sends itself
  // again (sendAutomaticallyWhen), which the service answers in the same assistant message.
  "client-tool": async (url, recorder) => {
    const calls = [];
    const chat = chatOn(url, recorder, {
      id: "ui-client-tool",
      body: { tools: [REFUND] },
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        calls.push({ name: toolCall.toolName, input: toolCall.input });
        if (toolCall.toolName !== "refund") return;
        chat.addToolOutput({
          tool: "refund",
          toolCallId: toolCall.toolCallId,
          output: `refunded ${toolCall.input.amount}`,
        });
      },
    });
    await chat.sendMessage({ text: 'lookup_order({"order_id": "42"}) then refund({"amount": 5})' });
    return { status: chat.status, calls, messages: chat.messages };
  },
  // A server tool that needs a person's approval: approved (or not) with the SDK's approval
  // response, after which the chat sends itself again.
  approve: (url, recorder) => approval(url, recorder, true),
  deny: (url, recorder) => approval(url, recorder, false),
  // regenerate() answers the last message again, in place of the answer it had.
  regenerate: async (url, recorder) => {
    const chat = chatOn(url, recorder, { id: "ui-regenerate" });
    await chat.sendMessage({ text: "First" });
    await chat.sendMessage({ text: "Second" });
    const replaced = chat.lastMessage.id;
    await chat.regenerate();
    const regenerated = chat.messages;
    await chat.sendMessage({ text: "Third" });
    return { status: chat.status, replaced, regenerated, messages: chat.messages };
  },
  // An answer still in flight when the page goes away: a new chat of the same id (the page
  // reloaded, its user message kept) resumes it, replayed from its start, then live.
  resume: async (url, recorder) => {
    const gate = await openGate();
    try {
      const first = chatOn(url, recorder, { id: "ui-resume" });
      const sending = first.sendMessage({ text: `hold({"url": "${gate.url}"})` });
      await gate.arrived;
      await first.until((c) => toolPart(c, "hold")?.state === "input-available", "the hold call");
      await first.stop();
      await sending;
      const left = first.messages;
      const second = chatOn(url, recorder, { id: "ui-resume", messages: [left[0]] });
      const resuming = second.resumeStream();
      await second.until((c) => toolPart(c, "hold") !== undefined, "the replayed hold call");
      const replayed = second.lastMessage;
      gate.release();
      await resuming;
      await second.resumeStream(); // nothing in flight any more: 204
      return { status: second.status, left, replayed, messages: second.messages };
    } finally {
      gate.close();
    }
  },
  // An agent the service does not have: the service's 400 and JSON error, raised by the SDK.
  "unknown-agent": async (url, recorder) => {
    const chat = chatOn(url, recorder, { id: "ui-unknown", body: { agent: "no-such-agent" } });
    await chat.sendMessage({ text: "Hello there" });
    const { name, message, statusCode } = chat.error ?? {};
    return { status: chat.status, error: { name, message, statusCode }, messages: chat.messages };
  },
};

async function approval(url, recorder, approved) {
  const chat = chatOn(url, recorder, {
    id: approved ? "ui-approve" : "ui-deny",
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  await chat.sendMessage({ text: 'cancel_order({"order_id": "42"})' });
  const asked = structuredClone(chat.lastMessage);
  const { approval } = toolPart(chat, "cancel_order");
  await chat.addToolApprovalResponse({ id: approval.id, approved });
  await chat.until(answered, "the answer after the approval");
  return { status: chat.status, asked, messages: chat.messages };
}

// An HTTP endpoint on 127.0.0.1 that holds the request it gets (the service's `hold` tool)
// until the scenario releases it.
async function openGate() {
  let arrive, release;
  const arrived = new Promise((resolve) => (arrive = resolve));
  const released = new Promise((resolve) => (release = resolve));
  const server = http.createServer(async (request, response) => {
    arrive();
    await released;
    response.end("released");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/gate`,
    arrived,
    release,
    close: () => {
      release();
      server.closeAllConnections();
      server.close();
    },
  };
}

// Every request the transport sends, with the status it got (and the body when not 2xx).
function recording(log) {
  return async (url, init = {}) => {
    const entry = {
      method: init.method ?? "GET",
      path: new URL(url).pathname,
      body: init.body === undefined ? null : JSON.parse(init.body),
    };
    log.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    if (!response.ok) entry.error = await response.clone().text();
    return response;
  };
}

// The SDK's parser and message builder over response bodies given on stdin.
async function validate() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const streams = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const out = [];
  for (const { body, message } of streams) out.push(await read(body, message));
  console.log(JSON.stringify(out));
}

async function read(body, message) {
  const parsed = [];
  const results = parseJsonEventStream({
    stream: new Response(body).body,
    schema: uiMessageChunkSchema,
  });
  for await (const result of results) {
    if (!result.success) return { error: String(result.error), types: parsed.map((c) => c.type) };
    parsed.push(result.value);
  }
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of parsed) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last = message;
  try {
    for await (const built of readUIMessageStream({ message, stream, terminateOnError: true })) {
      last = built;
    }
  } catch (error) {
    return { error: String(error), types: parsed.map((c) => c.type) };
  }
  return { types: parsed.map((c) => c.type), message: last };
}

async function main() {
  const [name, url] = process.argv.slice(2);
  if (name === "validate") return validate();
  const scenario = SCENARIOS[name];
  if (!scenario || !url) {
    console.error(`usage: node ui_chat.mjs {${Object.keys(SCENARIOS).join("|")}|validate} <url>`);
    process.exit(2);
  }
  const log = [];
  try {
    const observed = await scenario(url, recording(log));
    console.log(JSON.stringify({ ...observed, http: log }));
  } catch (error) {
    const { name: kind, message, statusCode, responseBody } = error;
    console.log(JSON.stringify({ error: { kind, message, statusCode, responseBody }, http: log }));
    process.exitCode = 1;
  }
}

await main();
