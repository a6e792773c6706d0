// The built executable logs JSON lines (pino, no transport threads), pretty lines on request, and
// serves /metrics (prom-client) to AO_METRICS_TOKEN: the dependencies survive `bun build --compile`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildExecutable } from "../../scripts/build";
import { onPostgres } from "../helpers/server";
import { freshDatabase } from "../helpers/postgres";
import { inheritedEnv } from "../helpers/processes";

let tmp: string;
let ao: string;
const baseEnv = inheritedEnv();

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-observe-"));
  ao = await buildExecutable(join(tmp, "ao"));
}, 120_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs `ao serve` (on a fresh PostgreSQL database in the PostgreSQL mode), waits for `ready` on its stderr, then hands over the text read so far. */
async function serve(env: Record<string, string>, ready: RegExp) {
  const database = onPostgres ? { AO_DATABASE_URL: await freshDatabase() } : {};
  const proc = Bun.spawn([ao, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", mkdtempSync(join(tmp, "data-"))], {
    env: { ...baseEnv, ...database, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of proc.stderr) text += decoder.decode(chunk);
  })();
  const deadline = Date.now() + 15_000;
  while (!ready.test(text)) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`ao serve did not start:\n${text}`);
    await Bun.sleep(20);
  }
  return {
    text: () => text,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      await reading;
    },
  };
}

describe("the executable", () => {
  test("JSON lines on stderr, one per request with the X-Request-Id the client got; /metrics for the token", async () => {
    const s = await serve({ AO_METRICS_TOKEN: "tok-for-prometheus" }, /"msg":"ao listening on/);
    try {
      const bound = /"bound":"([^"]+)"/.exec(s.text())![1];
      const health = await fetch(`http://${bound}/api/v1/health`, { headers: { "x-request-id": "probe-123" } });
      expect(health.headers.get("x-request-id")).toBe("probe-123");
      const metrics = await fetch(`http://${bound}/metrics`, { headers: { authorization: "Bearer tok-for-prometheus" } });
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('ao_http_requests_total{method="GET",route="/api/v1/health",status="200"} 1');
      expect((await fetch(`http://${bound}/metrics`)).status).toBe(401);
      await s.stop();
      const lines = s.text().trim().split("\n");
      const entries = lines.map((l) => JSON.parse(l));
      expect(entries.find((e) => e.requestId === "probe-123")).toMatchObject({ level: "info", msg: "request", route: "/api/v1/health", status: 200 });
      // The signal's line comes after the requests; on PostgreSQL only the presence leadership's
      // lines may follow it (a first try answering during the stop, then the step-down).
      const signalled = entries.findIndex((e) => e.msg === "received SIGTERM, shutting down");
      expect(signalled).toBeGreaterThan(entries.findIndex((e) => e.requestId === "probe-123"));
      const after = entries.slice(signalled + 1);
      expect(after.filter((e) => e.name !== "presence" || !/^(no longer )?leading$/.test(e.msg))).toEqual([]);
      expect(s.text()).not.toContain("tok-for-prometheus");
    } finally {
      await s.stop();
    }
  }, 30_000);

  test("AO_LOG_FORMAT=pretty: readable lines; a bad AO_LOG_LEVEL is refused at start", async () => {
    const pretty = await serve({ AO_LOG_FORMAT: "pretty" }, /INFO {2}ao listening on http:\/\/127\.0\.0\.1:\d+ bound="/);
    await pretty.stop();
    expect(pretty.text()).not.toContain('{"level"');

    const quiet = Bun.spawnSync([ao, "serve", "--port", "0", "--data-dir", join(tmp, "bad")], { env: { ...baseEnv, AO_LOG_LEVEL: "chatty" } });
    expect(quiet.exitCode).not.toBe(0);
    expect(quiet.stderr.toString()).toContain("AO_LOG_LEVEL must be one of");
  }, 30_000);
});
