// A small agent instrumented with the published @prefactor/core (npm), as its README
// shows: createConfig + createCore with the HTTP transport, spans through withSpan.
//
//   node core_client.mjs API_URL API_TOKEN
import { createConfig, createCore, SpanType, withSpan } from "@prefactor/core";

const [apiUrl, apiToken] = process.argv.slice(2);
const config = createConfig({
  transportType: "http",
  httpConfig: { apiUrl, apiToken, agentName: "js-support-agent", agentIdentifier: "v1.0.0" },
});
const core = createCore(config);

const answer = await withSpan(core.tracer, { name: "support", spanType: SpanType.AGENT, inputs: { question: "hi" } },
  async () => {
    const reply = await withSpan(core.tracer, { name: "chat", spanType: SpanType.LLM, inputs: { prompt: "hi" } },
      async () => ({ text: "hello from the model" }));
    await withSpan(core.tracer, { name: "lookup", spanType: SpanType.TOOL, inputs: { id: 42 } },
      async () => ({ found: true }));
    return reply;
  });
await core.shutdown();
process.stdout.write(JSON.stringify(answer) + "\n");
