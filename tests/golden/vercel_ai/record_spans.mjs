// Spans the Vercel AI SDK writes itself (issue 21): a two-step tool-using agent run through the SDK's
// own generateText with experimental_telemetry, its model the SDK's MockLanguageModelV3 (from
// `ai/test`) scripted to call a tool and then answer, with reasoning, cached input tokens and a tool
// that fails. The finished spans are written as the JS SDK's ReadableSpan serialises them (the shape
// of openinference-vercel's captured fixtures, tests/data/real/otel): what the loader reads from
// `ai.prompt.messages`, `ai.response.*`, `ai.usage.*` and `ai.prompt.tools` is the SDK's own output.
//
// Run by hand in a scratch folder (never by the tests):
//   mkdir /tmp/vercel-rec && cd /tmp/vercel-rec && npm init -y
//   npm install ai@6.0.68 @opentelemetry/api @opentelemetry/sdk-trace-base @opentelemetry/context-async-hooks zod
//   cp /path/to/tests/golden/vercel_ai/record_spans.mjs . && node record_spans.mjs > /path/to/tests/golden/vercel_ai/agent_tool_calls.spans.json
//   (node resolves `ai` from the script's own folder, so it runs from the scratch folder)
import { createRequire } from "node:module";
import { generateText, tool, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { z } from "zod";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());  // one trace, as in a real app
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer("ai");

const usage = (total, cacheRead, output, reasoning) => ({
  inputTokens: { total, noCache: total - cacheRead, cacheRead, cacheWrite: 0 },
  outputTokens: { total: output, text: output - reasoning, reasoning },
});
const steps = [
  {
    content: [
      { type: "reasoning", text: "I need the order's status before I can answer." },
      { type: "text", text: "Let me look up both orders." },
      { type: "tool-call", toolCallId: "call_A1187", toolName: "lookup_order", input: JSON.stringify({ order_id: "A-1187" }) },
      { type: "tool-call", toolCallId: "call_B2204", toolName: "lookup_order", input: JSON.stringify({ order_id: "B-2204" }) },
    ],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage: usage(182, 0, 61, 12),
  },
  {
    content: [{ type: "text", text: "A-1187 is in transit and arrives on 15 June; B-2204 could not be found." }],
    finishReason: { unified: "stop", raw: "stop" },
    usage: usage(297, 128, 24, 0),
  },
];
let call = 0;
const model = new MockLanguageModelV3({
  provider: "mock-provider",
  modelId: "mock-model-id",
  doGenerate: async () => ({
    ...steps[call++],
    warnings: [],
    response: { id: `resp-${call}`, modelId: "mock-model-id", timestamp: new Date(0) },
  }),
});

await generateText({
  model,
  system: "You are a support agent. Use the tools you are given.",
  messages: [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello! How can I help?" },
    { role: "user", content: "Where are orders A-1187 and B-2204?" },
  ],
  tools: {
    lookup_order: tool({
      description: "Look up an order by its identifier.",
      inputSchema: z.object({ order_id: z.string() }),
      execute: async ({ order_id }) => {
        if (order_id !== "A-1187") throw new Error(`no order ${order_id}`);
        return { status: "in_transit", eta: "2026-06-15" };
      },
    }),
  },
  stopWhen: stepCountIs(3),
  experimental_telemetry: { isEnabled: true, functionId: "support-agent", tracer },
});

const require = createRequire(import.meta.url);
const version = require("ai/package.json").version;
const spans = exporter.getFinishedSpans().map((s) => ({
  name: s.name,
  spanContext: { traceId: s.spanContext().traceId, spanId: s.spanContext().spanId },
  parentSpanId: s.parentSpanContext?.spanId,
  attributes: s.attributes,
  status: s.status,
  startTime: s.startTime,
  endTime: s.endTime,
  events: s.events.map((e) => ({ name: e.name, time: e.time, attributes: e.attributes ?? {} })),
  instrumentationScope: { name: s.instrumentationScope.name, version },
}));
process.stdout.write(JSON.stringify(spans, null, 2) + "\n");
