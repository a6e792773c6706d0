// A local stand-in of the Anthropic Messages API for the real `claude` CLI (ANTHROPIC_BASE_URL):
// `POST /v1/messages` answers from a script in the API's real streaming shapes (message_start,
// content_block_start/delta/stop with text_delta and input_json_delta, message_delta with the
// stop reason and usage, message_stop), or as one JSON message when the request does not stream.
// Every request is recorded, so a test can read what the agent sent back (tool results, denials).

export type ScriptBlock = { type: "text"; text: string } | { type: "tool_use"; name: string; input: Record<string, unknown>; id?: string };

export interface ScriptTurn {
  content: ScriptBlock[];
  usage?: { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  /** Holds the answer back until this resolves (to catch the agent mid-request). */
  hold?: Promise<unknown>;
  /** Answers with an API error instead (the API's error body: 429 rate_limit_error, 500 api_error, 529 overloaded_error). */
  error?: { status: number; type: string; message: string };
  /** The stream ends (the connection closed) after this many of its events, without message_stop. */
  cutAfter?: number;
}

export interface RecordedRequest {
  path: string;
  headers: Record<string, string>;
  body: any;
  /** Whether the request was the agent's own conversation (it carries tools), not a side call. */
  main: boolean;
}

export interface AnthropicStandin {
  url: string;
  requests: RecordedRequest[];
  /** The main-loop requests so far. */
  mainRequests(): RecordedRequest[];
  /** Resolves when `n` main-loop requests have arrived. */
  waitForMain(n: number, ms?: number): Promise<RecordedRequest>;
  stop(): Promise<void>;
}

export const STANDIN_MODEL = "claude-sonnet-4-5-20250929";

/** What one turn of the script answers: a function of the request, or the next of a list. */
export type Script = ScriptTurn[] | ((body: any, index: number) => ScriptTurn);

let ids = 0;
const id = (prefix: string) => `${prefix}_01standin${(++ids).toString().padStart(14, "0")}`;

function sse(event: string, data: unknown) {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function usageOf(turn: ScriptTurn) {
  return {
    input_tokens: turn.usage?.input_tokens ?? 100,
    cache_creation_input_tokens: turn.usage?.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: turn.usage?.cache_read_input_tokens ?? 0,
    output_tokens: turn.usage?.output_tokens ?? 20,
  };
}

function blocksOf(turn: ScriptTurn) {
  return turn.content.map((b) => (b.type === "text" ? { type: "text", text: b.text } : { type: "tool_use", id: b.id ?? id("toolu"), name: b.name, input: b.input }));
}

/** The SSE body of one streamed answer, in the order the API sends its events. */
export function streamOf(turn: ScriptTurn, model: string): string {
  const usage = usageOf(turn);
  const blocks = blocksOf(turn);
  let out = sse("message_start", {
    type: "message_start",
    message: { id: id("msg"), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  out += sse("ping", { type: "ping" });
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      out += sse("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      // Two deltas, as the API splits text into pieces.
      const text = b.text as string;
      const half = Math.ceil(text.length / 2);
      for (const piece of [text.slice(0, half), text.slice(half)].filter(Boolean)) {
        out += sse("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
      }
    } else {
      out += sse("content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
      const json = JSON.stringify(b.input);
      const half = Math.ceil(json.length / 2);
      for (const piece of ["", json.slice(0, half), json.slice(half)]) {
        out += sse("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } });
      }
    }
    out += sse("content_block_stop", { type: "content_block_stop", index });
  });
  const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  out += sse("message_delta", {
    type: "message_delta",
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: usage.cache_creation_input_tokens, cache_read_input_tokens: usage.cache_read_input_tokens, output_tokens: usage.output_tokens },
  });
  out += sse("message_stop", { type: "message_stop" });
  return out;
}

/** A body that sends `text`, then fails: the connection drops mid-answer. */
function cut(text: string) {
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      await Bun.sleep(50);
      controller.error(new Error("connection cut"));
    },
  });
}

function notFound() {
  return Response.json({ type: "error", error: { type: "not_found_error", message: "Not found" } }, { status: 404, headers: { "request-id": id("req") } });
}

export function startAnthropicStandin(script: Script): AnthropicStandin {
  const requests: RecordedRequest[] = [];
  const waiters: { n: number; resolve: (r: RecordedRequest) => void }[] = [];
  let main = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const headers = Object.fromEntries(req.headers);
      const body: any = req.method === "POST" ? await req.json().catch(() => null) : null;
      if (req.method !== "POST" || !body) {
        requests.push({ path: url.pathname, headers, body, main: false });
        return notFound();
      }
      if (url.pathname === "/v1/messages/count_tokens") {
        requests.push({ path: url.pathname, headers, body, main: false });
        return Response.json({ input_tokens: JSON.stringify(body.messages ?? []).length >> 2 });
      }
      if (url.pathname !== "/v1/messages") {
        requests.push({ path: url.pathname, headers, body, main: false });
        return notFound();
      }
      const isMain = Array.isArray(body.tools) && body.tools.length > 0;
      const rec = { path: url.pathname, headers, body, main: isMain };
      requests.push(rec);
      let turn: ScriptTurn;
      if (isMain) {
        const index = main++;
        for (const w of waiters.filter((w) => w.n === main)) w.resolve(rec);
        turn = typeof script === "function" ? script(body, index) : (script[index] ?? { content: [{ type: "text", text: "(the script has no more turns)" }] });
      } else {
        // Side calls (a title for the session, a quota probe): a short plain answer.
        turn = { content: [{ type: "text", text: "Scripted session" }], usage: { input_tokens: 10, output_tokens: 3 } };
      }
      if (turn.hold) await turn.hold;
      if (turn.error) {
        const { status, ...error } = turn.error;
        return Response.json({ type: "error", error }, { status, headers: { "request-id": id("req"), ...(status === 429 ? { "retry-after": "0" } : {}) } });
      }
      const model = typeof body.model === "string" ? body.model : STANDIN_MODEL;
      if (body.stream && turn.cutAfter !== undefined) {
        const events = streamOf(turn, model).split(/(?<=\n\n)/).slice(0, turn.cutAfter).join("");
        return new Response(cut(events), { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": id("req") } });
      }
      if (body.stream) {
        return new Response(streamOf(turn, model), { headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": id("req") } });
      }
      const blocks = blocksOf(turn);
      return Response.json(
        { id: id("msg"), type: "message", role: "assistant", model, content: blocks, stop_reason: blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn", stop_sequence: null, usage: usageOf(turn) },
        { headers: { "request-id": id("req") } },
      );
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    mainRequests: () => requests.filter((r) => r.main),
    waitForMain(n, ms = 20_000) {
      const have = requests.filter((r) => r.main);
      if (have.length >= n) return Promise.resolve(have[n - 1]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the stand-in saw ${requests.filter((r) => r.main).length} of ${n} main requests within ${ms} ms`)), ms);
        waiters.push({ n, resolve: (r) => (clearTimeout(timer), resolve(r)) });
      });
    },
    stop: async () => void server.stop(true),
  };
}

/** The environment that points the real CLI at the stand-in, with its own HOME and config. */
export function claudeEnv(standin: AnthropicStandin, home: string): Record<string, string> {
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: `${home}/.claude`,
    ANTHROPIC_BASE_URL: standin.url,
    ANTHROPIC_API_KEY: "test-key",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
  };
}
