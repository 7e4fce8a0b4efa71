// The Vercel AI SDK drives the service's OpenAI-compatible endpoint (tests/interop/test_ai_sdk.py).
//
//   node scenarios.mjs <scenario> <service-url>      (or the URL in AGENT_EXECUTOR_URL)
//
// Prints ONE JSON line: what the scenario observed through the AI SDK, the SDK's `warnings`, and
// `http`, the requests the SDK sent to the service (path, body, status; the body of an answer
// that is not 2xx), so a failure shows the exchange. Exits 1 when the scenario threw (the line
// then has `error`).
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, Output, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

// The client tool. The prompt names the server's `lookup_order` and this one, so the model
// calls both in one turn: the service runs the first and hands this one back to the SDK.
const PROMPT = 'lookup_order({"order_id": "42"}) then refund({"amount": 5})';

const refunds = [];
const tools = {
  refund: tool({
    description: "Refund an amount to the customer.",
    inputSchema: z.object({ amount: z.number() }),
    execute: async ({ amount }) => {
      refunds.push(amount);
      return `refunded ${amount}`;
    },
  }),
};

// The SDK's warnings (an unsupported setting, say) go into the output instead of stderr.
const warnings = [];
globalThis.AI_SDK_LOG_WARNINGS = (options) => warnings.push(...options.warnings);

const Answer = z.object({ answer: z.string(), confidence: z.number() });

const SCENARIOS = {
  // generateText with a client tool over three steps: tool calls, then the answer.
  "generate-tools": async (model) => {
    const result = await generateText({ model, tools, prompt: PROMPT, stopWhen: stepCountIs(3) });
    return { ...finished(result), steps: result.steps.map(step) };
  },
  // A tool forced by toolChoice: one step, the call's arguments made up by the model.
  "forced-tool": async (model) => {
    const result = await generateText({
      model,
      tools,
      toolChoice: { type: "tool", toolName: "refund" },
      prompt: "Refund the customer",
      stopWhen: stepCountIs(1),
    });
    return { ...finished(result), steps: result.steps.map(step) };
  },
  // A second turn, as a chat app sends it: the first turn's messages (the client tool's call
  // and result among them), then the user's next message.
  "follow-up": async (model) => {
    const first = await generateText({ model, tools, prompt: PROMPT, stopWhen: stepCountIs(3) });
    const messages = [
      { role: "user", content: PROMPT },
      ...first.responseMessages,
      { role: "user", content: "Thanks. Anything else?" },
    ];
    const result = await generateText({ model, tools, messages, stopWhen: stepCountIs(3) });
    return { first: first.text, ...finished(result) };
  },
  // An agent the service does not have: the SDK raises the service's OpenAI-shaped error and,
  // as the status says it would fail again, does not retry.
  "unknown-model": async (model, provider) => {
    try {
      await generateText({ model: provider.chatModel("no-such-agent"), prompt: "Hello there" });
    } catch (error) {
      const { name, message, statusCode, isRetryable } = error;
      return { caught: { name, message, statusCode, isRetryable } };
    }
    throw new Error("the unknown agent answered");
  },
  // streamText without tools: the text as textStream gives it, piece by piece.
  "stream-text": async (model) => {
    const result = streamText({ model, prompt: "Hello there" });
    const pieces = [];
    for await (const piece of result.textStream) pieces.push(piece);
    return { pieces, ...finished(await settled(result)) };
  },
  // streamText with a client tool: the kinds of fullStream's parts, in order, and the calls.
  "stream-tools": async (model) => {
    const result = streamText({ model, tools, prompt: PROMPT, stopWhen: stepCountIs(3) });
    const parts = [];
    const calls = [];
    for await (const part of result.fullStream) {
      if (part.type === "error") throw part.error;
      if (!parts.length || parts.at(-1) !== part.type) parts.push(part.type);
      if (part.type === "tool-call") calls.push({ name: part.toolName, input: part.input });
      if (part.type === "tool-result") calls.at(-1).output = part.output;
    }
    return { parts, calls, ...finished(await settled(result)) };
  },
  // Structured output: the schema goes to the model as response_format json_schema.
  structured: async (model) => {
    const result = await generateText({
      model,
      output: Output.object({ schema: Answer, name: "answer" }),
      prompt: "How sure are you?",
    });
    return { object: result.output, ...finished(result) };
  },
  // Structured output after a client tool: the object comes in the step after the results.
  "structured-tools": async (model) => {
    const result = await generateText({
      model,
      tools,
      output: Output.object({ schema: Answer, name: "answer" }),
      prompt: PROMPT,
      stopWhen: stepCountIs(3),
    });
    return { object: result.output, ...finished(result), steps: result.steps.length };
  },
};

function finished(result) {
  const { text, finishReason, totalUsage, finalStep } = result;
  return { text, finishReason, usage: tokens(totalUsage), response: metadata(finalStep.response) };
}

// A streamText result's promises, settled, in the shape of a generateText result.
async function settled(result) {
  const [text, finishReason, totalUsage, finalStep] = await Promise.all([
    result.text,
    result.finishReason,
    result.totalUsage,
    result.finalStep,
  ]);
  return { text, finishReason, totalUsage, finalStep };
}

function step({ finishReason, text, toolCalls, toolResults }) {
  return {
    finishReason,
    text,
    toolCalls: toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
    toolResults: toolResults.map((r) => ({ id: r.toolCallId, output: r.output })),
  };
}

function tokens(usage) {
  return { input: usage?.inputTokens, output: usage?.outputTokens };
}

function metadata(response) {
  return { id: response?.id, modelId: response?.modelId };
}

// Every request the SDK sends, with the status it got (and the body when it is not 2xx).
function recording(http) {
  return async (url, init) => {
    const entry = { path: new URL(url).pathname, body: JSON.parse(init?.body ?? "null") };
    http.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    if (!response.ok) entry.error = await response.clone().text();
    return response;
  };
}

async function main() {
  const [name, url = process.env.AGENT_EXECUTOR_URL] = process.argv.slice(2);
  const scenario = SCENARIOS[name];
  if (!scenario || !url) {
    console.error(`usage: node scenarios.mjs {${Object.keys(SCENARIOS).join("|")}} <service-url>`);
    process.exit(2);
  }
  const http = [];
  const provider = createOpenAICompatible({
    name: "agent-executor",
    baseURL: `${url}/v1`,
    apiKey: "sk-ai-sdk",
    includeUsage: true,
    supportsStructuredOutputs: true,
    fetch: recording(http),
  });
  const model = provider.chatModel("default");
  try {
    const observed = await scenario(model, provider);
    console.log(JSON.stringify({ ...observed, refunds, warnings, http }));
  } catch (error) {
    const { name: kind, message, statusCode, responseBody } = error;
    const failure = { kind, message, statusCode, responseBody };
    console.log(JSON.stringify({ error: failure, refunds, warnings, http }));
    process.exitCode = 1;
  }
}

await main();
