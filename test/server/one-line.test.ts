// Titles and names are one line of text (src/lib/text.ts): wherever a body carries one, a line
// break, a tab or a terminal escape is refused with 400 naming the field, and nothing changes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { makeIntegration, makeProject, svcSignature } from "../integrations/fixtures";
import { LINE_MESSAGE } from "../../src/lib/text";
import { all } from "../../src/db/query";

let s: TestServer;
let owner: Session;
let projectId: string;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  projectId = await makeProject(s, owner, "one-line");
});
afterAll(() => s?.stop());

/** The tables of each store, without the bookkeeping ones (named _...). */
const TABLES = {
  sqlite: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name",
  postgres:
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY name",
};

/** Every table's rows, to show that a refusal wrote nothing anywhere. */
async function snapshot(): Promise<string> {
  const tables = await s.core.store.read(all<{ name: string }>(TABLES[s.core.store.dialect]));
  const rows = [];
  for (const { name } of tables) rows.push([name, await s.core.store.read(all(`SELECT * FROM "${name}"`))]);
  return JSON.stringify(rows);
}

const BAD = [
  ["a line break", "first\nsecond"],
  ["a tab", "a\tb"],
  ["an escape sequence", "\u001b[2Jwiped"],
  ["only spaces", "   "],
] as const;

describe("one-line titles and names", () => {
  // [what, method, path, body with the text, field]
  const places: [string, string, () => string, (text: string) => Record<string, unknown>, string][] = [
    ["org name (create)", "POST", () => "/orgs", (name) => ({ name }), "name"],
    ["org name (rename)", "PATCH", () => `/orgs/${owner.orgId}`, (name) => ({ name }), "name"],
    ["project name (create)", "POST", () => `/orgs/${owner.orgId}/projects`, (name) => ({ name }), "name"],
    ["project name (rename)", "PATCH", () => `/orgs/${owner.orgId}/projects/${projectId}`, (name) => ({ name }), "name"],
    ["task title", "POST", () => `/orgs/${owner.orgId}/tasks`, (title) => ({ projectId, title, prompt: "p" }), "title"],
    ["token name", "POST", () => "/me/tokens", (name) => ({ name, orgId: owner.orgId }), "name"],
    ["integration name", "POST", () => `/orgs/${owner.orgId}/integrations`, (name) => ({ kind: "signed_json", name, projectId }), "name"],
    ["device sign-in client name", "POST", () => "/auth/device/start", (clientName) => ({ clientName }), "clientName"],
    ["worker name (pairing)", "POST", () => "/worker/pair", (name) => ({ name, hostname: "h" }), "name"],
  ];
  for (const [what, method, path, body, field] of places) {
    for (const [how, text] of BAD) {
      test(`${what} with ${how}: 400, nothing written`, async () => {
        const before = await snapshot();
        const r = await s.api(method, path(), { token: owner.accessToken, body: body(text) });
        expect(r.status).toBe(400);
        expect(r.body.error.code).toBe("validation_failed");
        expect(r.body.error.details).toContainEqual({ field, message: LINE_MESSAGE });
        expect(await snapshot()).toBe(before);
      });
    }
  }

  test("a signed JSON delivery whose title is two lines: 400, no task", async () => {
    const hook = await makeIntegration(s, owner, { kind: "signed_json", name: "json", projectId });
    const before = await snapshot();
    const raw = JSON.stringify({ title: "two\nlines", prompt: "p" });
    const res = await fetch(`${s.url}/api/v1/hooks/${hook.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-signature": svcSignature(hook.secret, raw), "x-svc-delivery": crypto.randomUUID() },
      body: raw,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.details).toContainEqual({ field: "title", message: LINE_MESSAGE });
    expect(await snapshot()).toBe(before);
  });

  test("names in any script, with symbols and emoji, are fine", async () => {
    const r = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "Équipe 東京 — café ☕" } });
    expect(r.status).toBe(201);
    expect(r.body.name).toBe("Équipe 東京 — café ☕");
  });
});
