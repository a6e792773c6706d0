// GitHub deliveries at POST /hooks/:id with real recorded payloads from @octokit/webhooks-examples,
// signed here with node:crypto: each answer of the seed's table, duplicates (also concurrent),
// and every way a delivery can be bad.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import definitions from "@octokit/webhooks-examples";
import { startTestServer, type TestServer } from "../helpers/server";
import { get } from "../../src/db/query";
import { countTasksOf, deliver, githubSignature, makeIntegration, makeWorld, taskRow, type World } from "./fixtures";

/** A real recorded example: event name and action (the first with that action). */
function example(event: string, action?: string): any {
  const def = (definitions as any[]).find((d) => d.name === event);
  const found = def?.examples.find((e: any) => action === undefined || e.action === action);
  if (!found) throw new Error(`no example ${event}.${action}`);
  return structuredClone(found);
}

let s: TestServer;
let w: World;
let gh: { id: string; secret: string };
let seq = 0;
const deliveryId = () => `7a1c7e80-${Date.now()}-${++seq}`;

beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  // The recorded examples are labeled "bug".
  gh = await makeIntegration(s, w.owner, { kind: "github", name: "GitHub", projectId: w.projectId, config: { label: "bug" } });
});
afterAll(() => s.stop());

function send(event: string, payload: unknown, opts: { id?: string; delivery?: string; secret?: string; headers?: Record<string, string> } = {}) {
  const body = typeof payload === "string" || payload instanceof Uint8Array ? payload : JSON.stringify(payload);
  return deliver(s, opts.id ?? gh.id, body, {
    "x-github-event": event,
    "x-github-delivery": opts.delivery ?? deliveryId(),
    "x-hub-signature-256": githubSignature(opts.secret ?? gh.secret, body),
    "user-agent": "GitHub-Hookshot/abc123",
    ...opts.headers,
  });
}

describe("the seed's answers", () => {
  test("ping -> 200 pong, no task", async () => {
    const before = await countTasksOf(s, gh.id);
    const r = await send("ping", example("ping"));
    expect(r).toEqual({ status: 200, body: { status: "pong" } });
    expect(await countTasksOf(s, gh.id)).toBe(before);
  });

  test("issues labeled with the configured label -> 201 created; the task records its source", async () => {
    const payload = example("issues", "labeled");
    const delivery = deliveryId();
    const r = await send("issues", payload, { delivery });
    expect(r.status).toBe(201);
    expect(r.body.status).toBe("created");
    expect(r.body.taskId).toStartWith("tsk_");

    const task = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${r.body.taskId}`, { token: w.owner.accessToken });
    expect(task.status).toBe(200);
    expect(task.body).toMatchObject({
      projectId: w.projectId,
      title: payload.issue.title,
      kind: "task",
      status: "queued",
      createdBy: { type: "integration", id: gh.id },
      source: {
        integrationId: gh.id,
        integrationKind: "github",
        deliveryId: delivery,
        item: { type: "github_issue", id: String(payload.issue.id), url: payload.issue.html_url, number: payload.issue.number },
      },
    });
    expect(task.body.prompt).toContain(payload.issue.html_url);

    // The same delivery again, and a new delivery of the same issue labeled again: duplicates.
    expect(await send("issues", payload, { delivery })).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
    expect(await send("issues", payload)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
  });

  test("an issue title with a line break or a terminal escape becomes a one-line task title", async () => {
    const payload = structuredClone(example("issues", "labeled"));
    payload.issue.id += 7000;
    payload.issue.number += 7000;
    payload.issue.title = "Crash on start\r\n\u001b]0;owned\u0007 when \u001b[1mHOME\u001b[0m is unset";
    const r = await send("issues", payload);
    expect(r.status).toBe(201);
    expect((await taskRow(s, r.body.taskId)).title).toBe("Crash on start when HOME is unset");
  });

  test("a comment or issue body with NUL characters (anyone may comment) still makes its task, the NULs dropped", async () => {
    const asked = structuredClone(example("issue_comment", "created"));
    asked.comment.id += 9000;
    asked.comment.body = "/ao fix\u0000 the parser\nit chokes on \u0000";
    asked.issue.body = "body\u0000text";
    const r = await send("issue_comment", asked);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.title).toBe("fix the parser");
    expect(row.prompt.includes("\u0000")).toBe(false);
    expect(row.prompt).toContain("it chokes on");
    expect(row.prompt).toContain("bodytext");
  });

  test("issue_comment created starting with the command -> task; without it, or by a bot -> ignored", async () => {
    const recorded = example("issue_comment", "created");
    // The recorded comment does not start with /ao.
    const plain = await send("issue_comment", recorded);
    expect(plain).toEqual({ status: 200, body: { status: "ignored", reason: "the comment does not start with /ao" } });

    const asked = structuredClone(recorded);
    asked.comment.body = "/ao fix the spelling in README.md\nand keep the tone";
    const r = await send("issue_comment", asked);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.title).toBe("fix the spelling in README.md");
    expect(row.prompt).toContain("and keep the tone");
    expect(row.prompt).toContain(asked.comment.html_url);
    expect(JSON.parse(row.source).item).toMatchObject({ type: "github_comment", id: String(asked.comment.id) });
    // The same comment delivered again under a new delivery id: duplicate.
    expect(await send("issue_comment", asked)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });

    const prefixOnly = structuredClone(recorded);
    prefixOnly.comment.id += 1;
    prefixOnly.comment.body = "/aonext thing";
    expect((await send("issue_comment", prefixOnly)).body.status).toBe("ignored");

    for (const user of [
      { ...recorded.comment.user, type: "Bot" },
      { ...recorded.comment.user, login: "renovate[bot]" },
    ]) {
      const bot = structuredClone(recorded);
      bot.comment.id += 100;
      bot.comment.body = "/ao do it";
      bot.comment.user = user;
      expect(await send("issue_comment", bot)).toEqual({ status: 200, body: { status: "ignored", reason: "the comment's author is a bot" } });
    }

    const edited = structuredClone(asked);
    edited.action = "edited";
    edited.comment.id += 200;
    expect((await send("issue_comment", edited)).body.status).toBe("ignored");
  });

  test("pull_request labeled -> review task with base and head (400 naming why while the project has no repository, no task)", async () => {
    const payload = example("pull_request", "labeled");
    const before = await countTasksOf(s, gh.id);
    const bare = await send("pull_request", payload);
    expect([bare.status, bare.body.error.code, bare.body.error.details]).toEqual([400, "validation_failed", [{ field: "kind", message: "review needs a project with a repository" }]]);
    expect(await countTasksOf(s, gh.id)).toBe(before);
    const added = await s.api("POST", `/orgs/${w.owner.orgId}/projects/${w.projectId}/repositories`, { token: w.owner.accessToken, body: { url: "https://github.com/acme/app.git" } });
    expect(added.status).toBe(201);
    const r = await send("pull_request", payload);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.kind).toBe("review");
    expect(JSON.parse(row.review)).toEqual({ base: payload.pull_request.base.ref, head: payload.pull_request.head.ref });
    expect(row.title).toBe(`Review: ${payload.pull_request.title}`);
    expect(await send("pull_request", payload)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
  });

  const ignoredCases: [string, string, (p: any) => void, string][] = [
    ["issues", "labeled", (p) => (p.label.name = "wontfix"), 'label "wontfix" is not "bug"'],
    ["issues", "opened", () => {}, "issues action opened is of no interest"],
    ["pull_request", "labeled", (p) => (p.label.name = "docs"), 'label "docs" is not "bug"'],
    ["pull_request", "opened", () => {}, "pull_request action opened is of no interest"],
  ];
  test.each(ignoredCases)("%s %s of no interest -> 200 ignored", async (event, action, change, reason) => {
    const payload = example(event, action);
    change(payload);
    payload.issue && (payload.issue.id += 5000);
    expect(await send(event, payload)).toEqual({ status: 200, body: { status: "ignored", reason } });
  });

  test("an event of no interest (push, star) -> 200 ignored", async () => {
    for (const event of ["push", "star"]) {
      const r = await send(event, example(event));
      expect(r).toEqual({ status: 200, body: { status: "ignored", reason: `event ${event} is of no interest` } });
    }
  });

  test("disabled integration: correctly signed -> 200 ignored; badly signed -> still 401", async () => {
    const off = await makeIntegration(s, w.owner, { kind: "github", name: "off", projectId: w.projectId, enabled: false, config: { label: "bug" } });
    const payload = example("issues", "labeled");
    expect(await send("issues", payload, { id: off.id, secret: off.secret })).toEqual({ status: 200, body: { status: "ignored", reason: "the integration is disabled" } });
    expect((await send("issues", payload, { id: off.id, secret: "aos_wrong" })).status).toBe(401);
    expect(await countTasksOf(s, off.id)).toBe(0);
  });
});

describe("bad deliveries", () => {
  const payload = () => {
    const p = example("issues", "labeled");
    p.issue.id = 900_000 + ++seq; // a fresh issue each time, so only the signature decides
    return p;
  };

  test("forged: signed with another secret -> 401 in the SPEC's error format, no task", async () => {
    const before = await countTasksOf(s, gh.id);
    const r = await send("issues", payload(), { secret: "aos_not-the-secret" });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("unauthorized");
    expect(typeof r.body.error.message).toBe("string");
    expect(await countTasksOf(s, gh.id)).toBe(before);
  });

  test("header missing, wrong scheme, not hex, empty -> 401", async () => {
    const body = JSON.stringify(payload());
    const good = githubSignature(gh.secret, body);
    for (const sig of [undefined, good.replace("sha256=", "sha1="), "sha256=zz" + good.slice(9), "sha256=", good.slice(0, -2), good.toUpperCase()]) {
      const headers: Record<string, string> = { "x-github-event": "issues", "x-github-delivery": deliveryId() };
      if (sig !== undefined) headers["x-hub-signature-256"] = sig;
      const r = await deliver(s, gh.id, body, headers);
      expect(`${sig} -> ${r.status}`).toBe(`${sig} -> 401`);
    }
  });

  test("truncated or tampered body (signature of the original) -> 401", async () => {
    const body = JSON.stringify(payload());
    const sig = githubSignature(gh.secret, body);
    for (const sent of [body.slice(0, body.length - 10), body.replace("Spelling", "Spelunking"), body + " "]) {
      const r = await deliver(s, gh.id, sent, { "x-github-event": "issues", "x-hub-signature-256": sig, "x-github-delivery": deliveryId() });
      expect(r.status).toBe(401);
    }
  });

  test("unknown integration id -> 401, the same answer as a forged signature", async () => {
    const body = JSON.stringify(payload());
    const unknown = await deliver(s, "int_00000000000000000000000000", body, { "x-github-event": "issues", "x-hub-signature-256": githubSignature(gh.secret, body) });
    const forged = await deliver(s, gh.id, body, { "x-github-event": "issues", "x-hub-signature-256": githubSignature("aos_x", body) });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual(forged.body);
    expect((await deliver(s, "nonsense", body, {})).status).toBe(401);
  });

  test("correctly signed but not JSON, or not an object -> 400 validation_failed", async () => {
    for (const body of ["{not json", "", "[1,2]", "\"text\"", Buffer.from([0x7b, 0xff, 0xfe, 0x7d])]) {
      const r = await send("issues", body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
    }
  });

  test("a webhook set to the form-encoded content type -> 400 saying to choose application/json, no task", async () => {
    const before = await countTasksOf(s, gh.id);
    const body = `payload=${encodeURIComponent(JSON.stringify(example("issues", "labeled")))}`;
    const r = await send("issues", body, { headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: "validation_failed",
      message: "the body is form-encoded (Content-Type: application/x-www-form-urlencoded), not JSON: set the webhook's content type to application/json",
    });
    expect(await countTasksOf(s, gh.id)).toBe(before);
  });

  test("correctly signed, labeled, but a branch git would take for an option or refuse -> 400 naming it, no task", async () => {
    const before = await countTasksOf(s, gh.id);
    for (const [base, head, field] of [
      ["-x", "feature", "pull_request.base.ref"],
      ["main", "--upload-pack=touch /tmp/pwn", "pull_request.head.ref"],
      ["main", "..", "pull_request.head.ref"],
    ]) {
      const payload = example("pull_request", "labeled");
      payload.pull_request.id += 9000;
      payload.pull_request.base.ref = base;
      payload.pull_request.head.ref = head;
      const r = await send("pull_request", payload);
      expect([r.status, r.body.error.code, r.body.error.details[0].field]).toEqual([400, "validation_failed", field]);
    }
    expect(await countTasksOf(s, gh.id)).toBe(before);
  });

  test("correctly signed, labeled, but the issue lacks its fields -> 400 naming the field", async () => {
    const r = await send("issues", { action: "labeled", label: { name: "bug" }, issue: { id: 1 } });
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].field).toBe("issue.html_url");
  });

  test("oversized (over 1 MiB) -> 413 payload_too_large, before the signature is looked at", async () => {
    const big = JSON.stringify({ ...payload(), padding: "x".repeat(1024 * 1024) });
    const r = await send("issues", big);
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe("payload_too_large");
    // Also when the length is not declared up front (chunked; the app refuses chunked JSON with
    // 411 before any route, so this one is sent as text).
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 20; i++) c.enqueue(new TextEncoder().encode("x".repeat(100_000)));
        c.close();
      },
    });
    const res = await fetch(`${s.url}/api/v1/hooks/${gh.id}`, { method: "POST", body: stream, headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(413);
  });
});

describe("concurrent duplicates make one task", () => {
  test("the same delivery 20 times at once: one 201, the rest 200 duplicate with its taskId", async () => {
    const p = example("issues", "labeled");
    p.issue.id = 5_000_000;
    const delivery = deliveryId();
    const results = await Promise.all(Array.from({ length: 20 }, () => send("issues", p, { delivery })));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBe(1);
    const taskId = created[0].body.taskId;
    for (const r of results.filter((r) => r.status !== 201)) expect(r).toEqual({ status: 200, body: { status: "duplicate", taskId } });
    const { n } = (await s.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE source LIKE ?", `%"id":"5000000"%`)))!;
    expect(n).toBe(1);
  });

  test("the same issue under 10 different delivery ids at once: one task", async () => {
    const p = example("issues", "labeled");
    p.issue.id = 5_000_001;
    const results = await Promise.all(Array.from({ length: 10 }, () => send("issues", p)));
    expect(results.filter((r) => r.status === 201).length).toBe(1);
    expect(new Set(results.map((r) => r.body.taskId)).size).toBe(1);
  });
});
