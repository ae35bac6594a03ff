// One agent run (invoke_agent → chat → execute_tool → chat, GenAI conventions) through the
// OpenTelemetry JS SDK's OTLP/HTTP exporter, JSON or protobuf, as a Node agent would send it.
// Usage: node otel_client.mjs BASE_URL TOKEN json|proto; prints the trace id.
import { context, trace, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { TracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace";
import { resourceFromAttributes } from "@opentelemetry/resources";
const [, , base, token, protocol] = process.argv;
const { OTLPTraceExporter } = protocol === "proto"
  ? await import("@opentelemetry/exporter-trace-otlp-proto")
  : await import("@opentelemetry/exporter-trace-otlp-http");
const exporter = new OTLPTraceExporter({ url: `${base}/v1/traces`, headers: { Authorization: `Bearer ${token}` } });
const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": `js-${protocol}-service` }),
  spanProcessors: [new BatchSpanProcessor({ exporter })],
});
const tracer = provider.getTracer("agentfolio-js-test");
const conversation = `js-${protocol}-conversation`;
const system = [{ type: "text", content: "You are a weather bot." }];
const user = { role: "user", parts: [{ type: "text", content: `Weather in Paris? (${protocol})` }] };
const call = { role: "assistant", parts: [{ type: "tool_call", id: "call_1", name: "get_weather", arguments: { city: "Paris" } }] };
const result = { role: "tool", parts: [{ type: "tool_call_response", id: "call_1", response: "18°C, sunny" }] };
const answer = { role: "assistant", parts: [{ type: "text", content: "It is 18°C and sunny in Paris." }], finish_reason: "stop" };
const agent = tracer.startSpan("invoke_agent weather", { kind: SpanKind.INTERNAL, attributes: {
  "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": `js-${protocol}-agent`, "gen_ai.conversation.id": conversation } });
const inAgent = trace.setSpan(context.active(), agent);
function chat(input, output, tokens) {
  const span = tracer.startSpan("chat gpt-4o", { kind: SpanKind.CLIENT, attributes: {
    "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
    "gen_ai.conversation.id": conversation,
    "gen_ai.system_instructions": JSON.stringify(system),
    "gen_ai.input.messages": JSON.stringify(input), "gen_ai.output.messages": JSON.stringify([output]),
    "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 7, "custom.kept": [1, 2, 3], "custom.ratio": 2.5 } },
    inAgent);
  span.end();
}
chat([user], call, 21);
const tool = tracer.startSpan("execute_tool get_weather", { attributes: {
  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "call_1" } }, inAgent);
tool.addEvent("tool.started", { attempt: 1 });
tool.setStatus({ code: SpanStatusCode.OK });
tool.end();
chat([user, call, result], answer, 40);
agent.end();
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify({ trace_id: agent.spanContext().traceId }));
