// JSON bodies are UTF-8 (SPEC): bytes that are not (a lone byte, a truncated or overlong sequence,
// a surrogate) are refused with 400 and nothing is written, on the JSON routes, the routes whose
// body is optional, inbound hooks and the worker socket; U+FFFD itself, emoji and CJK are text like
// any other and are stored exactly. The artifact upload takes any bytes, as before. The live socket
// decodes no binary frame at all: one is refused whole, its bytes never read as text.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { rawWebSocket } from "../helpers/raw-http";
import { createTaskApi, makeWorker, orgWithProject } from "../workers/helpers";
import { countTasksOf, deliver, makeIntegration, svcSignature } from "../integrations/fixtures";
import { LEASE_HEADER } from "../../src/protocol/requests";
import { PROTOCOL_VERSION } from "../../src/protocol/messages";
import { get } from "../../src/db/query";
import { newOrg, type Session } from "../helpers/identity";

let s: TestServer;
let p: Awaited<ReturnType<typeof orgWithProject>>;
beforeAll(async () => {
  s = await startTestServer();
  p = await orgWithProject(s);
});
afterAll(() => s.stop());

const utf8 = (text: string) => new TextEncoder().encode(text);
/** JSON text with `bytes` spliced in where `@` stands (inside a string). */
const spliced = (json: string, bytes: number[]) => {
  const [before, after] = json.split("@");
  return Buffer.concat([utf8(before), Buffer.from(bytes), utf8(after)]);
};

const INVALID: [string, number[]][] = [
  ["a lone 0xFF", [0xff]],
  ["a truncated sequence", [0xe2, 0x82]],
  ["an overlong encoding of /", [0xc0, 0xaf]],
  ["a UTF-16 surrogate", [0xed, 0xa0, 0x80]],
  ["an emoji cut short", [0xf0, 0x9f, 0x98]],
];
const NOT_UTF8 = { code: "validation_failed", message: "the body is not valid UTF-8" };
const TEXTS = ["a real \uFFFD replacement character", "emoji 😀👩‍💻 and CJK 漢字かな한글"];

const count = async (sql: string, ...args: string[]) => Number((await s.core.store.read(get<{ n: number }>(sql, ...args)))!.n);
const tasks = () => count("SELECT count(*) AS n FROM tasks");
const send = (method: string, path: string, raw: Uint8Array) => s.api(method, path, { token: p.token, raw, headers: { "content-type": "application/json" } });

describe("JSON routes", () => {
  test.each(INVALID)("POST /tasks with %s: 400, no task", async (_name, bytes) => {
    const before = await tasks();
    const r = await send("POST", `/orgs/${p.orgId}/tasks`, spliced(JSON.stringify({ projectId: p.projectId, title: "bad @ title", prompt: "x" }), bytes));
    expect([r.status, r.body.error]).toEqual([400, NOT_UTF8]);
    expect(await tasks()).toBe(before);
  });

  test.each(INVALID)("PATCH a project with %s: 400, the project unchanged", async (_name, bytes) => {
    const path = `/orgs/${p.orgId}/projects/${p.projectId}`;
    const before = (await s.api("GET", path, { token: p.token })).body;
    const r = await send("PATCH", path, spliced(JSON.stringify({ knowledge: "we use @ tabs" }), bytes));
    expect([r.status, r.body.error]).toEqual([400, NOT_UTF8]);
    expect((await s.api("GET", path, { token: p.token })).body).toEqual(before);
  });

  test("an optional body (device sign-in start) with invalid UTF-8: 400, no grant", async () => {
    const grants = () => count("SELECT count(*) AS n FROM device_grants");
    const before = await grants();
    const r = await s.api("POST", "/auth/device/start", { raw: spliced('{"clientName":"cli @"}', [0xff]), headers: { "content-type": "application/json" } });
    expect([r.status, r.body.error]).toEqual([400, NOT_UTF8]);
    expect(await grants()).toBe(before);
  });

  test.each(TEXTS)("%s: created and patched, stored exactly", async (text) => {
    const r = await send("POST", `/orgs/${p.orgId}/tasks`, utf8(JSON.stringify({ projectId: p.projectId, title: text, prompt: `${text}\n${text}` })));
    expect(r.status).toBe(201);
    expect([r.body.title, r.body.prompt]).toEqual([text, `${text}\n${text}`]);
    const row = await s.core.store.read(get<{ title: string; prompt: string }>("SELECT title, prompt FROM tasks WHERE id = ?", r.body.id));
    expect(row).toEqual({ title: text, prompt: `${text}\n${text}` });
    const patched = await send("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, utf8(JSON.stringify({ knowledge: text })));
    expect([patched.status, patched.body.knowledge]).toEqual([200, text]);
    expect((await s.core.store.read(get<{ knowledge: string }>("SELECT knowledge FROM projects WHERE id = ?", p.projectId)))!.knowledge).toBe(text);
  });
});

describe("inbound hooks", () => {
  let owner: Session;
  let ci: { id: string; secret: string };
  beforeAll(async () => {
    owner = p.session;
    ci = await makeIntegration(s, owner, { kind: "signed_json", name: "CI", projectId: p.projectId });
  });
  const signed = (body: Uint8Array) => deliver(s, ci.id, body, { "x-svc-signature": svcSignature(ci.secret, body) });

  test.each(INVALID)("a correctly signed delivery with %s: 400, no task", async (_name, bytes) => {
    const before = await countTasksOf(s, ci.id);
    const r = await signed(spliced(JSON.stringify({ title: "bad @", prompt: "x" }), bytes));
    expect([r.status, r.body.error]).toEqual([400, NOT_UTF8]);
    expect(await countTasksOf(s, ci.id)).toBe(before);
  });

  test.each(TEXTS)("%s: the task is created with the text exactly", async (text) => {
    const r = await signed(utf8(JSON.stringify({ title: text, prompt: text })));
    expect(r.status).toBe(201);
    expect(await s.core.store.read(get("SELECT title, prompt FROM tasks WHERE id = ?", r.body.taskId))).toEqual({ title: text, prompt: text });
  });
});

describe("the worker socket and the artifact upload", () => {
  /** A worker on a raw socket, greeted, holding the lease of a new task. */
  async function leased() {
    // An org of its own: a task queued by another test would be offered first.
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const ws = await rawWebSocket(s.server.port!, "/api/v1/worker/ws", { authorization: `Bearer ${w.credential}` });
    ws.send(1, utf8(JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, version: "test", tools: [], agents: [], providers: [], capacity: 1, running: [] })));
    await ws.next((m) => JSON.parse(m).type === "welcome");
    const task = await createTaskApi(s, p);
    const offer = JSON.parse(await ws.next((m) => JSON.parse(m).type === "offer" && JSON.parse(m).taskId === task.id));
    const claim = await s.api("POST", `/worker/tasks/${task.id}/claim`, { token: w.credential, body: { offerId: offer.offerId } });
    expect(claim.status).toBe(200);
    return { ws, w, p, taskId: task.id, lease: claim.body.leaseToken as string };
  }
  /** An events request on the socket whose log line holds `bytes`. */
  const eventsRequest = (taskId: string, lease: string, bytes: number[]) =>
    spliced(JSON.stringify({ type: "request", id: 1, op: "events", taskId, body: { leaseToken: lease, events: [{ seq: 1, type: "log", data: { line: "out @" } }] } }), bytes);
  const logs = (taskId: string) => count("SELECT count(*) AS n FROM task_events WHERE task_id = ? AND type = 'log'", taskId);

  test.each(INVALID)("a text frame with %s: the socket is closed with 1007 (RFC 6455), no event", async (_name, bytes) => {
    const { ws, taskId, lease } = await leased();
    ws.send(1, eventsRequest(taskId, lease, bytes));
    expect((await ws.closed).code).toBe(1007);
    ws.destroy();
    expect(await logs(taskId)).toBe(0);
  });

  test("a binary frame with invalid UTF-8: bad_message, no event; the same request in UTF-8 is answered", async () => {
    const { ws, taskId, lease } = await leased();
    ws.send(2, eventsRequest(taskId, lease, [0xff]));
    expect(JSON.parse(await ws.next((m) => JSON.parse(m).type === "error"))).toMatchObject({ code: "bad_message" });
    expect(await logs(taskId)).toBe(0);
    ws.send(2, eventsRequest(taskId, lease, [...utf8("😀")]));
    expect(JSON.parse(await ws.next((m) => JSON.parse(m).type === "reply"))).toMatchObject({ id: 1, status: 200 });
    const row = await s.core.store.read(get<{ data: string }>("SELECT data FROM task_events WHERE task_id = ? AND type = 'log'", taskId));
    expect(JSON.parse(row!.data)).toEqual({ line: "out 😀" });
    ws.destroy();
  });

  test("an artifact upload is raw bytes, valid UTF-8 or not, even typed as JSON: stored exactly", async () => {
    const { ws, w, p, taskId, lease } = await leased();
    const bytes = spliced('{"a":"@"}', [0xff, 0xc0, 0xaf]);
    const put = await fetch(`${s.url}/api/v1/worker/tasks/${taskId}/artifacts/data.json`, {
      method: "PUT",
      headers: { authorization: `Bearer ${w.credential}`, [LEASE_HEADER]: lease, "content-type": "application/json" },
      body: bytes,
    });
    expect(put.status).toBe(201);
    const got = await fetch(`${s.url}/api/v1/orgs/${p.orgId}/tasks/${taskId}/artifacts/data.json`, { headers: { authorization: `Bearer ${p.token}` } });
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(new Uint8Array(bytes));
    ws.destroy();
  });
});

describe("the live socket", () => {
  /** A live socket of p's owner, authenticated at the upgrade. */
  async function live() {
    const ws = await rawWebSocket(s.server.port!, "/api/v1/ws", { authorization: `Bearer ${p.token}` });
    const ask = async (frame: Uint8Array, opcode: 1 | 2 = 1) => {
      ws.send(opcode, frame);
      return JSON.parse(await ws.next(() => true));
    };
    return { ws, ask };
  }
  const subscribe = (bytes: number[]) => spliced(JSON.stringify({ type: "subscribe", orgId: p.orgId, id: "@" }), bytes);

  test.each(INVALID)("a text frame with %s: the socket is closed with 1007, as the worker socket's", async (_name, bytes) => {
    const { ws } = await live();
    ws.send(1, subscribe(bytes));
    expect((await ws.closed).code).toBe(1007);
    ws.destroy();
  });

  test.each([...INVALID, ["valid UTF-8", [...utf8("😀")]] as [string, number[]]])("a binary frame with %s: validation_failed, not decoded, nothing subscribed; the socket goes on", async (_name, bytes) => {
    const { ws, ask } = await live();
    expect(await ask(subscribe(bytes), 2)).toEqual({ type: "error", code: "validation_failed", message: "messages must be JSON text, not binary" });
    expect(await ask(utf8(JSON.stringify({ type: "ping", id: "p" })))).toMatchObject({ type: "pong", id: "p" });
    // The same subscribe as text is taken, its id exactly as sent.
    expect(await ask(spliced(JSON.stringify({ type: "subscribe", orgId: p.orgId, id: "@" }), [...utf8("😀")]))).toMatchObject({ type: "subscribed", orgId: p.orgId, id: "😀" });
    ws.destroy();
  });
});
