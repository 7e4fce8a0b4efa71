// The browser's own client, EventSource (the `eventsource` package, a WHATWG-compliant one for
// Node), reading a run whose connection drops mid-answer (tests/interop/test_eventsource.py).
//
//   node eventsource.mjs <service-url> <message>
//
// The first connection is cut right after the `tool_start` event reaches the client, as a phone
// changing networks would; EventSource reconnects by itself after the stream's `retry:` hint,
// sending `Last-Event-ID`. Prints ONE JSON line: every event EventSource delivered (type, data,
// lastEventId), every request it made (status, Last-Event-ID, X-Run-Id) and how a reconnect after
// `done` is answered.
import { EventSource } from "eventsource";

const [base, message] = process.argv.slice(2);
const url = `${base}/api/chat/stream?events=json&message=${encodeURIComponent(message)}`;
const requests = [];
let cuts = 0;

// A fetch that ends the first response's body right after `tool_start` arrived.
async function cuttingFetch(input, init) {
  const response = await fetch(input, init);
  const headers = new Headers(init?.headers ?? {});
  requests.push({
    status: response.status,
    lastEventId: headers.get("last-event-id"),
    runId: response.headers.get("x-run-id"),
  });
  if (cuts > 0 || !response.body) return response;
  cuts += 1;
  const reader = response.body.getReader();
  let seen = "";
  const body = new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
      seen += new TextDecoder().decode(value);
      if (seen.includes("event: tool_start")) {
        await reader.cancel(); // the connection drops: the server sees the client go
        controller.close();
      }
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

const events = [];
const done = new Promise((resolve, reject) => {
  const source = new EventSource(url, { fetch: cuttingFetch });
  for (const type of ["message", "tool_start", "tool_end", "error"]) {
    source.addEventListener(type, (e) => events.push({ type, data: e.data, id: e.lastEventId }));
  }
  source.addEventListener("done", (e) => {
    events.push({ type: "done", data: e.data, id: e.lastEventId });
    source.close();
    resolve();
  });
  // unref: a pending timer would keep Node alive for the full 20 s after `done`
  setTimeout(() => reject(new Error("no done within 20 s")), 20000).unref();
});

try {
  await done;
  const last = events[events.length - 1].id;
  const after = await fetch(url, { headers: { "Last-Event-ID": last } });
  console.log(JSON.stringify({ events, requests, afterDone: after.status }));
} catch (error) {
  console.log(JSON.stringify({ events, requests, error: String(error) }));
  process.exit(1);
}
