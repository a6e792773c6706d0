// Query parameters outside the API's routes (src/server/query.ts, sockets.ts): GET /metrics and the
// two WebSocket upgrades take none, and refuse one as the API does (400 validation_failed naming it,
// after the credential); the web app's pages and assets take any, as pages do, since the browser's
// router reads the parameters it knows and ignores the rest.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { makeWorker } from "../workers/helpers";

const METRICS_TOKEN = "scrape-secret-query";
let s: TestServer;
let owner: Session;
let worker: string;

beforeAll(async () => {
  s = await startTestServer({ metricsToken: METRICS_TOKEN });
  owner = await createAdmin(s);
  worker = (await makeWorker(s, owner.orgId)).credential;
});
afterAll(() => s.stop());

const NONE = (field: string) => ({ field, message: "is not a parameter of this route, which takes none" });
const UPGRADE = { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" };

/** An upgrade request's answer: its status and error body (a 101 has none). */
async function upgrade(path: string, authorization?: string) {
  const r = await fetch(s.url + path, { headers: { ...UPGRADE, ...(authorization ? { authorization } : {}) } });
  return { status: r.status, body: r.status === 101 ? null : ((await r.json()) as any) };
}

/** Whether a real WebSocket to `path` opens (closed again at once). */
function opens(path: string, authorization: string): Promise<boolean> {
  const ws = new WebSocket(s.url.replace("http", "ws") + path, { headers: { authorization } } as unknown as string[]);
  return new Promise((resolve) => {
    ws.onopen = () => (resolve(true), ws.close());
    ws.onerror = () => resolve(false);
  });
}

describe("GET /metrics takes no query parameter", () => {
  test("with the token: 400 validation_failed naming it; without one: 200 as before", async () => {
    const scrape = (query: string) => fetch(`${s.url}/metrics${query}`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const r = await scrape("?name[]=ao_tasks&_=1");
    expect([r.status, r.headers.get("content-type")]).toEqual([400, "application/json; charset=utf-8"]);
    expect(((await r.json()) as any).error).toEqual({
      code: "validation_failed",
      message: "the request query is invalid: name[] is not a parameter of this route, which takes none; _ is not a parameter of this route, which takes none",
      details: [NONE("name[]"), NONE("_")],
    });
    const plain = await scrape("");
    expect(plain.status).toBe(200);
    expect(await plain.text()).toContain("ao_tasks");
  });

  test("the token first: 401 without it or with a wrong one, 404 where metrics are off, whatever the query", async () => {
    expect((await fetch(`${s.url}/metrics?bogus=1`)).status).toBe(401);
    expect((await fetch(`${s.url}/metrics?bogus=1`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await fetch(`${s.url}/metrics?bogus=1`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(400);
    const off = await startTestServer({ metricsToken: null });
    try {
      const r = await fetch(`${off.url}/metrics?bogus=1`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect([r.status, ((await r.json()) as any).error.code]).toEqual([404, "not_found"]);
    } finally {
      await off.stop();
    }
  });
});

describe("the WebSocket upgrades take no query parameter", () => {
  test("live socket: a good header with a query is 400 naming it (a token in the address too); without the query it opens", async () => {
    for (const [query, fields] of [
      ["?token=abc", ["token"]],
      ["?orgId=org_x&_=1", ["orgId", "_"]],
    ] as const) {
      const r = await upgrade(`/api/v1/ws${query}`, `Bearer ${owner.accessToken}`);
      expect([query, r.status, r.body.error.code, r.body.error.details]).toEqual([query, 400, "validation_failed", fields.map(NONE)]);
    }
    expect(await opens("/api/v1/ws?token=abc", `Bearer ${owner.accessToken}`)).toBe(false);
    expect(await opens("/api/v1/ws", `Bearer ${owner.accessToken}`)).toBe(true);
  });

  test("live socket: the header first (a bad one 401, a worker's 403), and with no header (a browser, which signs in by its first message) the query is refused at once", async () => {
    const bad = await upgrade("/api/v1/ws?bogus=1", "Bearer garbage");
    expect([bad.status, bad.body.error.code]).toEqual([401, "unauthorized"]);
    const workers = await upgrade("/api/v1/ws?bogus=1", `Bearer ${worker}`);
    expect([workers.status, workers.body.error.code]).toEqual([403, "forbidden"]);
    const browser = await upgrade("/api/v1/ws?token=abc");
    expect([browser.status, browser.body.error.details]).toEqual([400, [NONE("token")]]);
  });

  test("worker socket: no or a bad credential is 401 whatever the query; the worker's own with a query is 400, without it the socket opens", async () => {
    for (const authorization of [undefined, "Bearer aow_nope", `Bearer ${owner.accessToken}`]) {
      const r = await upgrade("/api/v1/worker/ws?bogus=1", authorization);
      expect([authorization, r.status, r.body.error.code]).toEqual([authorization, 401, "unauthorized"]);
    }
    const r = await upgrade("/api/v1/worker/ws?version=9&capacity=2", `Bearer ${worker}`);
    expect([r.status, r.body.error.code, r.body.error.details]).toEqual([400, "validation_failed", [NONE("version"), NONE("capacity")]]);
    expect(await opens("/api/v1/worker/ws?version=9", `Bearer ${worker}`)).toBe(false);
    expect(await opens("/api/v1/worker/ws", `Bearer ${worker}`)).toBe(true);
  });
});

describe("the web app's pages take any query parameter", () => {
  test("every page's HTML and an asset answer as without a query: the parameters the app reads, and ones it does not (tracking, a cache buster)", async () => {
    const appRoutes = (s.app.routes as { method: string; path: string }[]).filter((r) => r.method === "GET" && !r.path.startsWith("/api/") && r.path !== "/metrics");
    expect(appRoutes.length).toBeGreaterThanOrEqual(15);
    const page = await (await fetch(`${s.url}/`)).text();
    const query = "?org=org_x&view=board&status=queued&code=WDJB-MJHT&utm_source=chat&_=1&_=2";
    for (const r of appRoutes) {
      const path = r.path === "/assets/:name" ? "/assets/app.css" : r.path.replace(/:(\w+)/g, (_, name: string) => `${name}_x`);
      const res = await fetch(`${s.url}${path}${query}`);
      expect([path, res.status, res.headers.get("content-type")?.split(";")[0]]).toEqual([path, 200, path.startsWith("/assets/") ? "text/css" : "text/html"]);
      if (!path.startsWith("/assets/")) expect(await res.text()).toBe(page);
    }
  });
});
