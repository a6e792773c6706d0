// One client address cannot hold the server's connections: requests in flight and WebSockets are
// capped per address, and slow bodies are cut by time. Loopback only, bounded counts: 127.0.0.1 plays
// the greedy client, 127.0.0.2 (also loopback on Linux) everyone else.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import net from "node:net";
import { startTestServer, type TestServer } from "../helpers/server";
import { rawHttp } from "../helpers/raw-http";
import { newOrg } from "../helpers/identity";
import { createTaskApi, makeWorker, orgWithProject, ProtocolClient, workerApi } from "../workers/helpers";
import { LEASE_HEADER } from "../../src/protocol/requests";

const CAP = 8;
let s: TestServer;
let held: net.Socket[] = [];
beforeAll(async () => {
  s = await startTestServer({ connections: { perAddress: CAP, idleSec: 2, requestSec: 60 }, liveTimeouts: { authMs: 60_000, recheckMs: 60_000 } });
});
afterEach(() => {
  for (const c of held) c.destroy();
  held = [];
});
afterAll(() => s.stop());

const health = (localAddress: string) => rawHttp(s.server.port!, "GET /api/v1/health HTTP/1.1\nHost: ao", { localAddress });

/** A login whose body never finishes: it stays in flight until the socket goes or times out. */
function slowBody(localAddress = "127.0.0.1"): Promise<{ socket: net.Socket; answer: Promise<string> }> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: s.server.port!, host: "127.0.0.1", localAddress }, () => {
      socket.write("POST /api/v1/auth/login HTTP/1.1\r\nHost: ao\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{");
      let text = "";
      const answer = new Promise<string>((r) => {
        socket.on("data", (d) => (text += d));
        socket.on("close", () => r(text));
      });
      socket.on("error", () => {});
      held.push(socket);
      resolve({ socket, answer });
    });
  });
}

/** Waits until the server has `n` requests in flight. */
async function inFlight(n: number) {
  while (s.server.pendingRequests < n) await Bun.sleep(5);
}

describe("connections per client address", () => {
  test(`40 slow bodies from one address: ${CAP} are held, the rest refused at once (429, closed); other addresses are served`, async () => {
    const first = await Promise.all(Array.from({ length: CAP }, () => slowBody()));
    await inFlight(CAP);
    const refused = await Promise.all(
      Array.from({ length: 40 - CAP }, () => rawHttp(s.server.port!, "POST /api/v1/auth/login HTTP/1.1\nHost: ao\nContent-Type: application/json\nContent-Length: 1000", { body: "{", untilClose: true })),
    );
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(JSON.parse(r.body).error.code).toBe("rate_limited");
      expect(r.headers["retry-after"]).toBe("1");
      expect(r.closed).toBe(true);
    }
    expect(s.server.pendingRequests).toBe(CAP);
    expect((await health("127.0.0.1")).status).toBe(429);
    expect((await health("127.0.0.2")).status).toBe(200);

    // The held ones go: the address is served again.
    for (const { socket } of first) socket.destroy();
    let r = await health("127.0.0.1");
    while (r.status === 429) r = await health("127.0.0.1");
    expect(r.status).toBe(200);
  });

  test("open WebSockets count until they close", async () => {
    const url = s.url.replace("http", "ws") + "/api/v1/ws";
    const sockets = Array.from({ length: CAP }, () => new WebSocket(url));
    await Promise.all(sockets.map((ws) => new Promise((opened) => (ws.onopen = opened))));
    expect((await health("127.0.0.1")).status).toBe(429);
    const closed = new Promise((r) => (sockets[0].onclose = r));
    sockets[0].close();
    await closed;
    let r = await health("127.0.0.1");
    while (r.status === 429) r = await health("127.0.0.1");
    expect(r.status).toBe(200);
    for (const ws of sockets) ws.close();
  });

  test("a JSON body still arriving the idle timeout after its headers is cut without an answer", async () => {
    const started = Date.now();
    const { socket, answer } = await slowBody("127.0.0.2");
    const trickle = setInterval(() => socket.write(" "), 200);
    const text = await answer;
    clearInterval(trickle);
    expect(text).toBe("");
    // idleSec 2, and Bun checks timeouts every 4 s or so.
    expect(Date.now() - started).toBeLessThan(9000);
  });

  test("a routed upload may take longer than the idle timeout while its chunks keep coming", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = (await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId })).body;
    const chunks = 7; // one a second: past idleSec (2) and Bun's 4 s timer granularity
    const socket = net.connect({ port: s.server.port!, host: "127.0.0.1", localAddress: "127.0.0.2" });
    held.push(socket);
    let text = "";
    const closed = new Promise<void>((r) => socket.on("close", () => r()));
    socket.on("data", (d) => (text += d));
    socket.write(
      `PUT /api/v1/worker/tasks/${task.id}/artifacts/slow.txt HTTP/1.1\r\nHost: ao\r\nAuthorization: Bearer ${w.credential}\r\n${LEASE_HEADER}: ${claim.leaseToken}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${chunks * 1024}\r\nConnection: close\r\n\r\n`,
    );
    for (let i = 0; i < chunks; i++) {
      await Bun.sleep(1000); // the pace of a slow client, not a wait for the server
      socket.write(Buffer.alloc(1024, 97));
    }
    await closed;
    expect(text).toStartWith("HTTP/1.1 201");
    c.close();
  }, 20_000);
});
