// The worker's HTTP client given several servers of one service: a request that gets no answer
// (refused, or cut off before its answer) moves the client on to the next server, round robin, and
// its retry goes there; an HTTP error answer moves nothing; requests that fail together move once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { HttpError, WorkerClient } from "../../src/worker/client";

type Seen = { server: string; path: string };
const seen: Seen[] = [];
let live: ReturnType<typeof Bun.serve>[] = [];
let cutOff: Bun.TCPSocketListener;
let up: string[];
let refused: string;
let dropping: string;

/** A server answering as the worker protocol does: 200 with JSON, or 500 on /fail. */
function answering(name: string) {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      seen.push({ server: name, path });
      if (path.endsWith("/fail")) return Response.json({ error: { code: "internal", message: "broken" } }, { status: 500 });
      return Response.json({ from: name });
    },
  });
  live.push(server);
  return `http://127.0.0.1:${server.port}`;
}

beforeAll(async () => {
  up = [answering("A"), answering("B")];
  const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  refused = `http://127.0.0.1:${gone.port}`;
  await gone.stop(true);
  // Starts an answer and closes the connection halfway through it: a server that died mid-answer.
  cutOff = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { data: (socket) => void socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"writ') },
  });
  dropping = `http://127.0.0.1:${cutOff.port}`;
});

afterAll(async () => {
  await Promise.all(live.map((s) => s.stop(true)));
  cutOff.stop(true);
});

function client(servers: string[]) {
  const c = new WorkerClient(servers);
  const switches: string[][] = [];
  c.onSwitch = (from, to) => switches.push([from, to]);
  return { c, switches };
}

test("one server: the client stays on it, whatever happens", async () => {
  const { c, switches } = client([refused]);
  await expect(c.request("GET", "/x")).rejects.toMatchObject({ status: 0, code: "network" });
  expect(c.server).toBe(refused);
  expect(switches).toEqual([]);
});

test("a refused connection: the retry goes to the next server, which the client keeps using", async () => {
  const { c, switches } = client([refused, up[0]]);
  expect(await c.request("GET", "/first", undefined, { retries: 1 })).toEqual({ from: "A" });
  expect(switches).toEqual([[refused, up[0]]]);
  expect(c.server).toBe(up[0]);
  expect(await c.request("GET", "/second")).toEqual({ from: "A" });
});

test("an answer cut off midway counts as no answer", async () => {
  const { c, switches } = client([dropping, up[1]]);
  expect(await c.request("POST", "/events", { seq: 1 }, { retries: 1 })).toEqual({ from: "B" });
  expect(switches).toEqual([[dropping, up[1]]]);
});

test("without retries the request fails, and the next request goes to the next server", async () => {
  const { c } = client([refused, up[0]]);
  const err = await c.request("POST", "/claim").then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(HttpError);
  expect(err).toMatchObject({ status: 0, code: "network", message: expect.stringContaining(refused) });
  expect(await c.request("POST", "/claim")).toEqual({ from: "A" });
});

test("an HTTP error answer is an answer: retried on the same server, no move", async () => {
  const { c, switches } = client([up[0], up[1]]);
  const before = seen.length;
  await expect(c.request("POST", "/fail", undefined, { retries: 1 })).rejects.toMatchObject({ status: 500, code: "internal" });
  expect(seen.slice(before)).toEqual([
    { server: "A", path: "/api/v1/fail" },
    { server: "A", path: "/api/v1/fail" },
  ]);
  expect(switches).toEqual([]);
  expect(c.server).toBe(up[0]);
});

test("round robin: past the last server it comes back to the first", async () => {
  const { c, switches } = client([up[1], refused]);
  c.failover(up[1]);
  expect(c.server).toBe(refused);
  expect(await c.request("GET", "/x", undefined, { retries: 1 })).toEqual({ from: "B" });
  expect(switches).toEqual([[up[1], refused], [refused, up[1]]]);
});

test("requests that fail together move the client once", async () => {
  const { c, switches } = client([refused, up[0], up[1]]);
  const answers = await Promise.all(Array.from({ length: 5 }, () => c.request("GET", "/x", undefined, { retries: 1 })));
  expect(answers).toEqual(Array(5).fill({ from: "A" }));
  expect(switches).toEqual([[refused, up[0]]]);
});
