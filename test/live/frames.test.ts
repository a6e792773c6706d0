// Bun buffers a whole WebSocket frame before any handler sees it, so the frame limit is what bounds
// the memory an unauthenticated socket can hold.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { MAX_FRAME_BYTES } from "../../src/server/sockets";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

function open(path: string) {
  const ws = new WebSocket(s.url.replace("http", "ws") + path);
  const closed = new Promise<number>((r) => (ws.onclose = (e) => r(e.code)));
  const first = new Promise<string>((r) => (ws.onmessage = (e) => r(String(e.data))));
  return { ws, closed, first, opened: new Promise((r) => (ws.onopen = r)) };
}

describe("frames before authentication", () => {
  test("a frame past the limit closes the socket (1009) before the live socket reads it", async () => {
    const c = open("/api/v1/ws");
    await c.opened;
    c.ws.send("x".repeat(MAX_FRAME_BYTES + 1));
    expect(await c.closed).toBe(1009);
    expect((await s.api("GET", "/health")).status).toBe(200);
  });

  test("a frame within the limit reaches the handler, which answers in its own terms", async () => {
    const c = open("/api/v1/ws");
    await c.opened;
    c.ws.send("x".repeat(100 * 1024));
    expect(JSON.parse(await c.first)).toMatchObject({ type: "error", code: "validation_failed" });
    c.ws.close();
  });
});
