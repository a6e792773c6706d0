// Several servers, one service, as shipped: the built executable run as two `ao serve` processes on
// one PostgreSQL database with one master key file (AO_MASTER_KEY_FILE, written by the first), and
// two `ao worker` processes of the same executable (--exec agent), one connected to each server,
// paired by device code through the other server. Tasks created alternately on both run exactly
// once, live subscribers on both see every change once, a person's cancel on A reaches the worker
// on B, an artifact uploaded through A downloads through B, and a server killed with SIGKILL under
// load loses nothing it acknowledged while its worker moves to the other (a worker takes several
// --server URLs).
// PostgreSQL is needed (test/helpers/postgres.ts starts Debian's package) whatever AO_TEST_DATABASE says.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildExecutable } from "../../scripts/build";
import { freshDatabase } from "../helpers/postgres";
import { saveCredential } from "../../src/worker/credential";
import { alive } from "./worker-helpers";
import { AoProcess, api, literally, ok, startServe, Subscriber, until, type Served } from "./cluster-helpers";

const PASSWORD = "cluster admin password";
const TASKS = 200;

// One script plays every agent: what it does depends on the task's title.
const AGENT = `
case "$AO_TASK_TITLE" in
  quick)
    echo "quick $AO_TASK_ID"
    ;;
  load)
    echo "load $AO_TASK_ID"
    sleep 0.2
    ;;
  wait)
    echo $$ > "$OUT/$AO_TASK_ID.pid"
    echo started
    sleep 30
    ;;
  artifact)
    cp "$OUT/blob.bin" "$AO_ARTIFACTS_DIR/blob.bin"
    ;;
esac
`;

let tmp: string;
let ao: string;
let a: Served;
let b: Served;
let env: Record<string, string>;
let token: string;
let orgId: string;
/** Projects: any worker, only the worker on A (label on-a), only the worker on B (label on-b). */
const project = { any: "", onA: "", onB: "" };
const workers: { a?: AoProcess; b?: AoProcess } = {};
const ids: Record<"a" | "b", string> = { a: "", b: "" };
let live: { a: Subscriber; b: Subscriber };

/** `ao worker` of the executable, the agent above on 4 slots. */
function startWorker(name: "a" | "b", servers: string[]): AoProcess {
  const args = ["worker", ...servers.flatMap((s) => ["--server", s]), "--data-dir", join(tmp, `worker-${name}`), "--name", `worker-${name}`];
  args.push("--labels", `on-${name}`, "--capacity", "4", "--exec", `sh ${join(tmp, "agent.sh")}`, "--kill-grace-ms", "500");
  return new AoProcess(ao, args, { OUT: join(tmp, "out") });
}

/**
 * Pairs a worker by device code as `ao worker` would (its request to `server`, a person's approval
 * through `via`, its poll) and keeps the credential in the worker's data directory, so the worker
 * starts paired instead of sleeping through its 5 s poll interval (test/e2e/worker.test.ts pairs
 * from the worker's own output).
 */
async function pairWorker(name: "a" | "b", server: Served, via: Served, access: string) {
  const started = await ok(server.url, "POST", "/worker/pair", { body: { name: `worker-${name}`, hostname: "cluster-e2e", labels: [`on-${name}`] } });
  await ok(via.url, "POST", "/pairing/approve", { token: access, body: { userCode: started.userCode, orgId } });
  const paired = await ok(server.url, "POST", "/worker/pair/poll", { body: { deviceCode: started.deviceCode } });
  saveCredential(join(tmp, `worker-${name}`), { server: server.url, workerId: paired.workerId, orgId, credential: paired.credential });
  ids[name] = paired.workerId;
}

const createTask = (s: Served, projectId: string, title: string) =>
  api(s.url, "POST", `/orgs/${orgId}/tasks`, { token, body: { projectId, title, prompt: `run ${title}` } });

/** Every task of a project, through `s` (pages of 200). */
async function tasksOf(s: Served, projectId: string): Promise<any[]> {
  const all: any[] = [];
  let cursor = "";
  do {
    const page = await ok(s.url, "GET", `/orgs/${orgId}/tasks?projectId=${projectId}&limit=200${cursor ? `&cursor=${cursor}` : ""}`, { token });
    all.push(...page.items);
    cursor = page.nextCursor ?? "";
  } while (cursor);
  return all;
}

/** Waits until no task of the project is queued or running (two small pages a poll, not the whole list). */
async function settled(s: Served, projectId: string, ms: number) {
  const none = async (status: string) =>
    (await ok(s.url, "GET", `/orgs/${orgId}/tasks?projectId=${projectId}&status=${status}&limit=1`, { token })).items.length === 0;
  await until(async () => (await none("queued")) && (await none("running")), ms, "every task of the project finished", 500);
}

/** A task's whole timeline, through `s`. */
async function timeline(s: Served, taskId: string): Promise<any[]> {
  const all: any[] = [];
  for (let after = 0; ; ) {
    const page = await ok(s.url, "GET", `/orgs/${orgId}/tasks/${taskId}/events?limit=200&after=${after}`, { token });
    all.push(...page.items);
    if (!page.nextCursor) return all;
    after = page.items.at(-1).seq;
  }
}

/** Runs `fn` over `items`, `width` at a time. */
async function inParallel<T, R>(items: T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-cluster-e2e-"));
  writeFileSync(join(tmp, "agent.sh"), AGENT);
  mkdirSync(join(tmp, "out"));
  mkdirSync(join(tmp, "key"));
  const [built, databaseUrl] = await Promise.all([buildExecutable(join(tmp, "bin", "ao")), freshDatabase("ao_e2e_cluster")]);
  ao = built;
  // The key file does not exist yet: the first server writes it, the second reads it.
  env = { AO_DATABASE_URL: databaseUrl, AO_MASTER_KEY_FILE: join(tmp, "key", "master.key") };
  // One after the other: the first migrates the database and creates the administrator.
  a = await startServe(ao, join(tmp, "data-a"), { ...env, AO_ADMIN_EMAIL: "admin@example.test", AO_ADMIN_PASSWORD: PASSWORD });
  b = await startServe(ao, join(tmp, "data-b"), env);

  // Signed in on B: the administrator A created, with a session B can verify (the shared key).
  const session = await ok(b.url, "POST", "/auth/login", { body: { email: "admin@example.test", password: PASSWORD } });
  orgId = (await ok(a.url, "GET", "/orgs", { token: session.accessToken })).items[0].id;
  token = (await ok(a.url, "POST", "/me/tokens", { token: session.accessToken, body: { name: "cluster-e2e", orgId } }, 201)).token;
  const newProject = async (s: Served, name: string, workerLabels: string[]) =>
    (await ok(s.url, "POST", `/orgs/${orgId}/projects`, { token, body: { name, policy: { workerLabels } } }, 201)).id as string;
  project.any = await newProject(a, "any", []);
  project.onA = await newProject(b, "on-a", ["on-a"]);
  project.onB = await newProject(a, "on-b", ["on-b"]);

  // Each worker pairs with one server and is approved by a person on the other.
  await Promise.all([pairWorker("a", a, b, session.accessToken), pairWorker("b", b, a, session.accessToken)]);
  workers.a = startWorker("a", [a.url]);
  workers.b = startWorker("b", [b.url]);
  await Promise.all([workers.a.waitFor(new RegExp(`connected as ${ids.a}`), 20_000), workers.b.waitFor(new RegExp(`connected as ${ids.b}`), 20_000)]);
  live = { a: await Subscriber.open(a.url, token, orgId), b: await Subscriber.open(b.url, token, orgId) };
}, 180_000);

afterAll(async () => {
  live?.a.close();
  live?.b.close();
  await Promise.all([workers.a?.stop(), workers.b?.stop()]);
  await Promise.all([a?.proc.stop(), b?.proc.stop()]);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("two servers on one database, a worker on each", () => {
  /** The 200 tasks of the first test, and their timelines as the API gives them at the end. */
  const created: { id: string; via: "a" | "b" }[] = [];
  const timelines = new Map<string, any[]>();

  test(`${TASKS} tasks created alternately on A and B all run, each exactly once, on workers of both servers`, async () => {
    await inParallel(Array.from({ length: TASKS }, (_, i) => (i % 2 === 0 ? "a" : "b") as "a" | "b"), 8, async (via) => {
      const r = await createTask(via === "a" ? a : b, project.any, "quick");
      expect(r.status).toBe(201);
      created.push({ id: r.body.id, via });
    });
    await settled(b, project.any, 150_000);
    const done = await tasksOf(b, project.any);
    expect(done).toHaveLength(TASKS);
    expect(done.filter((t) => t.status !== "completed")).toEqual([]);
    expect(done.filter((t) => t.attempt !== 1)).toEqual([]);

    // One claim each: a single queued -> running in every timeline, by the worker the record names.
    const tally: Record<string, number> = {};
    await inParallel(created, 6, async ({ id }, i) => {
      const events = await timeline(i % 2 ? a : b, id);
      timelines.set(id, events);
      const claims = events.filter((e) => e.type === "status" && e.data.to === "running");
      expect(claims).toHaveLength(1);
      expect(claims[0].data).toMatchObject({ from: "queued", attempt: 1 });
      expect(events.filter((e) => e.type === "status").map((e) => e.data.to)).toEqual(["queued", "running", "completed"]);
      expect(events.filter((e) => e.type === "log").map((e) => e.data.line)).toContain(`quick ${id}`);
      const record = done.find((t) => t.id === id)!;
      expect(record.workerId).toBe(claims[0].data.workerId);
      tally[record.workerId] = (tally[record.workerId] ?? 0) + 1;
    });
    // Both workers took some: tasks created on A ran on the worker connected to B and the other way round.
    expect(Object.keys(tally).sort()).toEqual([ids.a, ids.b].sort());
    const crossed = created.filter(({ id, via }) => done.find((t) => t.id === id)!.workerId !== ids[via]);
    expect(crossed.length).toBeGreaterThan(0);
  }, 180_000);

  test("live subscribers on A and on B saw every task.updated and task.event of those tasks once", async () => {
    expect(timelines.size).toBe(TASKS);
    for (const [name, sub] of Object.entries(live)) {
      // Events are exact by seq; wait for every task's last one and its completed record.
      await sub.until(
        () => created.every(({ id }) => (sub.events.get(id)?.length ?? 0) >= timelines.get(id)!.length && sub.updates.get(id)?.at(-1)?.task.status === "completed"),
        30_000,
        `every event and the completed record of all ${TASKS} tasks on server ${name.toUpperCase()}`,
      );
      for (const { id } of created) {
        const want = timelines.get(id)!;
        const got = sub.events.get(id)!;
        // No gap, no duplicate: seqs 1..n in order, each the event the timeline has.
        expect(got.map((m) => m.event.seq)).toEqual(want.map((e) => e.seq));
        expect(got.map((m) => [m.event.type, m.event.data])).toEqual(want.map((e) => [e.type, e.data]));
        // One record per change: created, claimed, completed (a record read on arrival at the other
        // server may already show a later state, never an earlier one).
        const statuses = sub.updates.get(id)!.map((m) => m.task.status);
        expect(statuses).toHaveLength(3);
        const order = ["queued", "running", "completed"];
        expect(statuses.map((s) => order.indexOf(s))).toEqual(statuses.map((s) => order.indexOf(s)).sort());
        expect(statuses.at(-1)).toBe("completed");
      }
    }
  }, 60_000);

  test("a cancel through A reaches the worker connected to B, which stops the agent at once", async () => {
    // Read before the create: B's worker may take the task and say so before the create's answer is read.
    const from = workers.b!.output.length;
    const created = await createTask(a, project.onB, "wait");
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await workers.b!.waitFor(new RegExp(`running ${id} attempt 1`), 20_000, from);
    const pidFile = join(tmp, "out", `${id}.pid`);
    await until(async () => (await timeline(a, id)).some((e) => e.type === "log" && e.data.line === "started"), 20_000, "the agent's first line, read through A");
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(alive(pid)).toBe(true);

    const cancelled = await ok(a.url, "POST", `/orgs/${orgId}/tasks/${id}/actions`, { token, body: { action: "cancel" } });
    expect(cancelled.status).toBe("cancelled");
    // Promptly: well before any heartbeat (10 s) or lease check could tell the worker.
    await workers.b!.waitFor(new RegExp(`cancelling ${id} attempt 1`), 5000, from);
    await until(() => !alive(pid), 5000, "the agent ended", 20);
    expect((await ok(b.url, "GET", `/orgs/${orgId}/tasks/${id}`, { token })).status).toBe("cancelled");
  }, 60_000);

  test("an artifact uploaded through A downloads through B, byte for byte", async () => {
    // Every byte value, over more than a megabyte (several chunks wherever they are kept).
    const blob = new Uint8Array(1024 * 1024 + 4099);
    for (let i = 0; i < blob.length; i++) blob[i] = (i * 7 + (i >> 8)) & 0xff;
    writeFileSync(join(tmp, "out", "blob.bin"), blob);
    const created = await createTask(b, project.onA, "artifact");
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // The worker connected to A runs it, so its upload goes through A.
    const done = await until(async () => {
      const t = await ok(a.url, "GET", `/orgs/${orgId}/tasks/${id}`, { token });
      return (t.status === "completed" || t.status === "failed") && t;
    }, 30_000, "the artifact task finished");
    expect(done).toMatchObject({ status: "completed", workerId: ids.a });
    expect(done.artifacts.map((x: any) => [x.name, x.size])).toEqual([["blob.bin", blob.length]]);

    const r = await fetch(`${b.url}/api/v1/orgs/${orgId}/tasks/${id}/artifacts/blob.bin`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(blob))).toBe(true);
    // The documented headers hold whichever server answers. Content-Length is the one exception the
    // route documents: Bun sends a body streamed from the database chunked, without it (oven-sh/bun#10507).
    expect(r.headers.get("etag")).toBe(`"${createHash("sha256").update(blob).digest("hex")}"`);
    expect(r.headers.get("content-disposition")).toContain("blob.bin");
    expect(r.headers.get("content-security-policy")).toBe("sandbox");
    expect([null, String(blob.length)]).toContain(r.headers.get("content-length"));
  }, 60_000);

  test("kill -9 of A under load: every acknowledged create exists and finishes; A's worker continues on B", async () => {
    // The worker on A again, now given both URLs (one credential for the whole service).
    await workers.a!.stop();
    workers.a = startWorker("a", [a.url, b.url]);
    await workers.a.waitFor(literally(`connected as ${ids.a} (${a.url})`), 20_000);
    const wa = workers.a;

    // Creates go on, alternately to A and B, 4 at a time, until B has acknowledged 12 after the kill.
    const acked: { id: string; via: "a" | "b" }[] = [];
    const unanswered: string[] = [];
    let killed = false;
    let afterKill = 0;
    let n = 0;
    const creating = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!(killed && afterKill >= 12) && n < 400) {
          const via = n++ % 2 === 0 ? "a" : "b";
          const wasKilled = killed;
          try {
            const r = await createTask(via === "a" ? a : b, project.any, "load");
            expect(r.status).toBe(201);
            acked.push({ id: r.body.id, via });
            if (wasKilled && via === "b") afterKill++;
          } catch (err) {
            // Only a request to A once it is being killed may go unanswered.
            if (via !== "a" || !killed) throw err;
            unanswered.push(String(err));
          }
        }
      }),
    );
    const from = wa.output.length;
    await wa.waitFor(/running tsk_\w+ attempt 1: load/, 30_000, from);
    await until(() => acked.filter((x) => x.via === "a").length >= 10, 30_000, "10 creates acknowledged by A", 10);
    killed = true;
    a.proc.proc.kill("SIGKILL");
    await a.proc.exited;
    await creating;
    expect(unanswered.length).toBeGreaterThan(0);

    // The worker that was on A notices and goes on with B.
    await wa.waitFor(/disconnected; reconnecting/, 15_000, from);
    await wa.waitFor(literally(`connected as ${ids.a} (${b.url})`), 30_000, from);

    await settled(b, project.any, 90_000);
    const done = new Map((await tasksOf(b, project.any)).map((t) => [t.id, t]));
    expect(acked.filter(({ id }) => !done.has(id))).toEqual([]);
    expect(acked.filter(({ id }) => done.get(id).status !== "completed").map(({ id }) => done.get(id))).toEqual([]);
    // Each finished once, whatever happened to the attempt A had offered or leased when it died.
    await inParallel(acked, 6, async ({ id }) => {
      const events = await timeline(b, id);
      expect(events.filter((e) => e.type === "status" && e.data.to === "completed")).toHaveLength(1);
    });

    // A's worker takes new work through B: a task only it may run, created on B.
    const only = await createTask(b, project.onA, "quick");
    expect(only.status).toBe(201);
    const ran = await until(async () => {
      const t = await ok(b.url, "GET", `/orgs/${orgId}/tasks/${only.body.id}`, { token });
      return t.status === "completed" && t;
    }, 30_000, "the task for the worker that was on A");
    expect(ran.workerId).toBe(ids.a);
  }, 120_000);
});
