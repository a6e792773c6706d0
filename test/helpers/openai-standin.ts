// A local stand-in of the OpenAI Responses API for the real `codex` CLI: `POST /v1/responses`
// (stream: true) answered with the API's real server-sent events from a script, one scripted
// response per request, and `GET /v1/models` as the API lists models. Every request body is kept,
// so a test can read what Codex sent back (a declined command's output, a follow-up message).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** One output item of a scripted response. */
export type ScriptItem =
  | { message: string }
  /** Codex's shell tool (`exec_command`, unified exec) with a command line; a justification asks to run it outside the sandbox. */
  | { exec: string; justification?: string }
  /** Codex's freeform `apply_patch` tool with a patch in its own format. */
  | { patch: string }
  /** The `request_user_input` tool (offered in Plan mode). */
  | { ask: { id: string; header: string; question: string; options?: { label: string; description: string }[] }[] };

export interface ScriptResponse {
  items: ScriptItem[];
  /** Token counts reported in response.completed. */
  usage?: { input: number; cached?: number; output: number; reasoning?: number };
  /** The stream stays open (after response.created) until this resolves: a turn that is still thinking. */
  hold?: Promise<unknown>;
  /** Answers with an API error instead of a stream (OpenAI's error body). */
  error?: { status: number; type: string; code: string | null; message: string };
}

export interface ResponsesRequest {
  body: any;
  headers: Record<string, string>;
}

export interface OpenAIStandIn {
  url: string;
  /** The base URL a provider's `base_url` takes (…/v1). */
  baseUrl: string;
  requests: ResponsesRequest[];
  /** Appends responses to the script. */
  push(...responses: ScriptResponse[]): void;
  /** Resolves when the n-th (1-based) /v1/responses request has arrived. */
  waitForRequest(n: number, ms?: number): Promise<ResponsesRequest>;
  /** The function/custom tool outputs Codex sent back for a call id, from the latest request that has one. */
  toolOutput(callId: string): string | null;
  /** The user messages' texts of a request. */
  userTexts(request: ResponsesRequest): string[];
  stop(): Promise<void>;
}

const DEFAULT_USAGE = { input: 1200, cached: 0, output: 40, reasoning: 0 };

function sse(events: Record<string, unknown>[]): string[] {
  return events.map((e, i) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`);
}

/** The output items (as the API sends them when done) and call ids of one scripted response. */
function outputItems(response: ScriptResponse, n: number) {
  return response.items.map((item, i) => {
    const suffix = `${n}_${i}`;
    if ("message" in item)
      return { id: `msg_${suffix}`, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: item.message, annotations: [], logprobs: [] }] };
    if ("exec" in item) {
      // No login shell (its profile scripts are slow on a loaded machine) and a long wait for the
      // command's end, so Codex reports the finished command rather than a session still running.
      const args: Record<string, unknown> = { cmd: item.exec, login: false, yield_time_ms: 30_000 };
      // Codex takes a justification only with a request to leave the sandbox, its approval question.
      if (item.justification) Object.assign(args, { sandbox_permissions: "require_escalated", justification: item.justification });
      return { id: `fc_${suffix}`, type: "function_call", status: "completed", call_id: `call_exec_${suffix}`, name: "exec_command", arguments: JSON.stringify(args) };
    }
    if ("patch" in item) return { id: `ctc_${suffix}`, type: "custom_tool_call", status: "completed", call_id: `call_patch_${suffix}`, name: "apply_patch", input: item.patch };
    return { id: `fc_${suffix}`, type: "function_call", status: "completed", call_id: `call_ask_${suffix}`, name: "request_user_input", arguments: JSON.stringify({ questions: item.ask }) };
  });
}

/** The events of one streamed response, in the order the API sends them. */
function responseEvents(response: ScriptResponse, n: number, model: string) {
  const id = `resp_${n.toString(16).padStart(8, "0")}`;
  const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), status: "in_progress", model, output: [] as unknown[], usage: null, error: null };
  const items = outputItems(response, n);
  const head = [
    { type: "response.created", response: base },
    { type: "response.in_progress", response: base },
  ];
  const body: Record<string, unknown>[] = [];
  items.forEach((item, output_index) => {
    if (item.type === "message") {
      const text = (item as { content: { text: string }[] }).content[0].text;
      body.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", content: [] } });
      body.push({ type: "response.content_part.added", item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
      // Deltas of a few words, as the API streams them.
      for (const delta of text.match(/\S+\s*|\s+/g) ?? []) body.push({ type: "response.output_text.delta", item_id: item.id, output_index, content_index: 0, delta, logprobs: [] });
      body.push({ type: "response.output_text.done", item_id: item.id, output_index, content_index: 0, text, logprobs: [] });
      body.push({ type: "response.content_part.done", item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text, annotations: [], logprobs: [] } });
    } else if (item.type === "function_call") {
      const args = (item as { arguments: string }).arguments;
      body.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", arguments: "" } });
      body.push({ type: "response.function_call_arguments.delta", item_id: item.id, output_index, delta: args });
      body.push({ type: "response.function_call_arguments.done", item_id: item.id, output_index, arguments: args });
    } else {
      const input = (item as { input: string }).input;
      body.push({ type: "response.output_item.added", output_index, item: { ...item, status: "in_progress", input: "" } });
      body.push({ type: "response.custom_tool_call_input.delta", item_id: item.id, output_index, delta: input });
      body.push({ type: "response.custom_tool_call_input.done", item_id: item.id, output_index, input });
    }
    body.push({ type: "response.output_item.done", output_index, item });
  });
  const u = { ...DEFAULT_USAGE, ...response.usage };
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: u.input + u.output,
  };
  const tail = [{ type: "response.completed", response: { ...base, status: "completed", output: items, usage } }];
  return { head, rest: [...body, ...tail] };
}

const MODELS = ["gpt-5.5", "gpt-5.4", "gpt-5.4-mini"].map((id) => ({ id, object: "model", created: 1_760_000_000, owned_by: "system" }));

export function startOpenAIStandIn(opts: { model?: string; logDir?: string } = {}): OpenAIStandIn {
  const script: ScriptResponse[] = [];
  const requests: ResponsesRequest[] = [];
  const waiters: { n: number; resolve: (r: ResponsesRequest) => void }[] = [];
  const model = opts.model ?? "gpt-5.5";
  const open = new Set<ReadableStreamDefaultController>();

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method === "GET" && url.pathname === "/v1/models") return Response.json({ object: "list", data: MODELS });
      if (req.method !== "POST" || url.pathname !== "/v1/responses")
        return Response.json({ error: { message: `Invalid URL (${req.method} ${url.pathname})`, type: "invalid_request_error", param: null, code: null } }, { status: 404 });
      const body = await req.json();
      const recorded = { body, headers: Object.fromEntries(req.headers) };
      requests.push(recorded);
      const n = requests.length;
      if (opts.logDir) {
        mkdirSync(opts.logDir, { recursive: true });
        writeFileSync(join(opts.logDir, `request-${n}.json`), JSON.stringify(body, null, 2));
      }
      for (const w of waiters.filter((w) => w.n <= n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(requests[w.n - 1]);
      }
      const response = script.shift() ?? { items: [{ message: "Done." }] };
      if (response.error) {
        const { status, ...error } = response.error;
        return Response.json({ error: { ...error, param: null } }, { status, headers: { "x-request-id": `req_${n}` } });
      }
      const { head, rest } = responseEvents(response, n, model);
      const encoder = new TextEncoder();
      const stream = new ReadableStream({
        async start(controller) {
          open.add(controller);
          try {
            for (const chunk of sse(head)) controller.enqueue(encoder.encode(chunk));
            if (response.hold) await response.hold;
            const chunks = sse([...head, ...rest]).slice(head.length);
            for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
            controller.close();
          } catch {
            // The client went away (a cancelled turn).
          } finally {
            open.delete(controller);
          }
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-request-id": `req_${n}` } });
    },
  });
  const url = `http://127.0.0.1:${server.port}`;

  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    push: (...responses) => void script.push(...responses),
    waitForRequest(n, ms = 30_000) {
      if (requests.length >= n) return Promise.resolve(requests[n - 1]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the stand-in got ${requests.length} requests, not ${n}, within ${ms} ms`)), ms);
        waiters.push({ n, resolve: (r) => (clearTimeout(timer), resolve(r)) });
      });
    },
    toolOutput(callId) {
      for (const r of [...requests].reverse()) {
        const out = (r.body.input as any[]).find((i) => (i.type === "function_call_output" || i.type === "custom_tool_call_output") && i.call_id === callId);
        if (out) return typeof out.output === "string" ? out.output : JSON.stringify(out.output);
      }
      return null;
    },
    userTexts(request) {
      return (request.body.input as any[])
        .filter((i) => i.type === "message" && i.role === "user")
        .flatMap((i) => (Array.isArray(i.content) ? i.content : []).map((c: { text?: string }) => c.text ?? ""));
    },
    async stop() {
      for (const c of open) {
        try {
          c.close();
        } catch {}
      }
      await server.stop(true);
    },
  };
}

/** A CODEX_HOME whose config points the real CLI at the stand-in (a custom provider, no login). */
export function codexHome(dir: string, standIn: Pick<OpenAIStandIn, "baseUrl">, model = "gpt-5.5"): { home: string; env: Record<string, string> } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "config.toml"),
    [
      `model = "${model}"`,
      `model_provider = "standin"`,
      // No update checks, no analytics: nothing leaves loopback.
      `check_for_update_on_startup = false`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[model_providers.standin]`,
      `name = "OpenAI stand-in"`,
      `base_url = "${standIn.baseUrl}"`,
      `wire_api = "responses"`,
      `env_key = "STANDIN_OPENAI_API_KEY"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ``,
    ].join("\n"),
  );
  return { home: dir, env: { CODEX_HOME: dir, STANDIN_OPENAI_API_KEY: "sk-standin-test" } };
}
