// A Bot Server client as that service's README shows one: fetch, then read the body with
// response.body.getReader() and a TextDecoder; with reactVerbose, split the text into lines
// and JSON.parse each ReAct step. The suspend/resume flow: a step with action "user_input" ends
// the response; the client writes the person's reply into that step's observation and sends
// every step back as reactInitialSteps, with the reply as the last message.
//
// usage: node bot_server.mjs <base URL ending in /compat/bot-server> <task> <reply>
// prints {"plain": {...}, "first": {...}, "second": {...}, "health": {...}, "error": {...}}

const [base, task, reply] = process.argv.slice(2);

async function chat(body) {
  const response = await fetch(`${base}/api/chat/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  text += decoder.decode();
  return { status: response.status, contentType: response.headers.get("content-type"), text };
}

function steps(text) {
  return text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
}

const plain = await chat({ messages: [{ type: "human", content: "hello there" }] });

const messages = [{ type: "human", content: task }];
const first = await chat({ messages, reactVerbose: true });
const stored = steps(first.text);
const asking = stored[stored.length - 1];
if (asking.action !== "user_input") throw new Error(`expected user_input, got ${first.text}`);
asking.observation = reply;
const second = await chat({
  messages: [...messages, { type: "human", content: reply }],
  reactVerbose: true,
  reactInitialSteps: stored,
});

const health = await (await fetch(`${base}/api/health`)).json();
const refused = await fetch(`${base}/api/chat/stream`, {
  method: "POST",
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ messages: [] }),
});

console.log(JSON.stringify({
  plain,
  first: { ...first, steps: steps(first.text) },
  second: { ...second, steps: steps(second.text) },
  health,
  error: { status: refused.status, body: await refused.json() },
}));
