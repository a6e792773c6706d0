// Validation messages say what is allowed (issue 8 item 3): each detail names the field and what
// it accepts, once per field, and the top message says it too (the web app shows only that).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";

let s: TestServer;
let owner: Session;
let projectId: string;
let taskId: string;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  const p = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "messages" } });
  projectId = p.body.id;
  const t = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId, title: "t", prompt: "p" } });
  taskId = t.body.id;
});
afterAll(() => s.stop());

const ORG = () => `/orgs/${owner.orgId}`;
const task = (extra: Record<string, unknown>) => ({ projectId, title: "t", prompt: "p", ...extra });

// [what, method, path, body, field, the detail's message]
const rows: [string, string, () => string, (() => unknown) | undefined, string, string][] = [
  ["priority high", "POST", () => `${ORG()}/tasks`, () => task({ priority: "high" }), "priority", "must be one of LOW, MEDIUM, HIGH, URGENT"],
  ["kind bug", "POST", () => `${ORG()}/tasks`, () => task({ kind: "bug" }), "kind", "must be one of task, review, plan"],
  ["status filter bogus", "GET", () => `${ORG()}/tasks?status=bogus`, undefined, "status", "must be one of queued, running, paused, needs_input, needs_approval, completed, failed, cancelled"],
  ["kind filter bogus", "GET", () => `${ORG()}/tasks?kind=bogus`, undefined, "kind", "must be one of task, review, plan"],
  ["limit abc", "GET", () => `${ORG()}/tasks?limit=abc`, undefined, "limit", "must be an integer from 1 to 200, in decimal digits only"],
  ["limit 201", "GET", () => `${ORG()}/tasks?limit=201`, undefined, "limit", "must be an integer from 1 to 200"],
  ["archived maybe", "GET", () => `${ORG()}/projects?archived=maybe`, undefined, "archived", "must be true or false"],
  ["action fly", "POST", () => `${ORG()}/tasks/${taskId}/actions`, () => ({ action: "fly" }), "action", "must be one of pause, resume, cancel, retry, restart, input, approve, deny"],
  ["member role root", "POST", () => `${ORG()}/members`, () => ({ email: "a@b.test", role: "root" }), "role", "must be one of owner, admin, member, viewer"],
  ["integration kind svn", "POST", () => `${ORG()}/integrations`, () => ({ kind: "svn", name: "x", projectId }), "kind", "must be one of github, gitlab, signed_json"],
  ["a string boolean", "PATCH", () => ORG(), () => ({ requireWorkerApproval: "yes" }), "requireWorkerApproval", "must be true or false"],
  [
    "project name 42",
    "POST",
    () => `${ORG()}/projects`,
    () => ({ name: 42 }),
    "name",
    "must be a string: one line of 1 to 100 characters, with no control characters (newlines, tabs, escapes), not only spaces",
  ],
  ["empty title", "POST", () => `${ORG()}/tasks`, () => task({ title: "" }), "title", "must be 1 to 200 characters long, on one line"],
  ["missing prompt", "POST", () => `${ORG()}/tasks`, () => ({ projectId, title: "t" }), "prompt", "is required: a string of 1 to 100000 characters"],
  ["token expiry soon", "POST", () => "/me/tokens", () => ({ name: "x", orgId: owner.orgId, expiresAt: "soon" }), "expiresAt", "must be a date and time (ISO 8601, e.g. 2030-01-31T12:00:00Z)"],
  ["after -1", "GET", () => `${ORG()}/tasks/${taskId}/events?after=-1`, undefined, "after", "must be an integer, at least 0, in decimal digits only"],
  // Patterns are told in words, not as regular expressions.
  [
    "repository name .git",
    "POST",
    () => `${ORG()}/projects/${projectId}/repositories`,
    () => ({ url: "https://git.example.test/messages/app.git", name: ".git" }),
    "name",
    "must be a name of letters, digits and . _ -, not starting with . or -, 1 to 100 characters",
  ],
  [
    "GitHub owner -x",
    "POST",
    () => `${ORG()}/codehost/repositories`,
    () => ({ owner: "-x", name: "app" }),
    "owner",
    "must be a GitHub login: letters, digits and -, starting with a letter or digit, up to 39 characters",
  ],
  ["GitHub repository a/b", "POST", () => `${ORG()}/codehost/repositories`, () => ({ owner: "octo", name: "a/b" }), "name", "must be a repository name: letters, digits and . _ -, 1 to 100 characters"],
  [
    "repository {}",
    "POST",
    () => `${ORG()}/projects/${projectId}/repositories`,
    () => ({}),
    "url",
    "required unless moving a repository in: give either url (with name and branch if wanted), or fromProjectId and repositoryId",
  ],
];

describe("each message names what the field accepts", () => {
  for (const [what, method, path, body, field, message] of rows) {
    test(what, async () => {
      const r = await s.api(method, path(), { token: owner.accessToken, body: body?.() });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
      expect(r.body.error.details).toEqual([{ field, message }]);
      expect(r.body.error.message).toContain(field);
      expect(r.body.error.message).toContain(message.replace(/^required unless.*: /, ""));
    });
  }
});

test("an empty title is one error, not one per failed keyword", async () => {
  const r = await s.api("POST", `${ORG()}/tasks`, { token: owner.accessToken, body: task({ title: "", prompt: "" }) });
  expect(r.body.error.details.map((d: { field: string }) => d.field)).toEqual(["title", "prompt"]);
});

test("no message is TypeBox's own wording", async () => {
  for (const [, method, path, body] of rows) {
    const r = await s.api(method, path(), { token: owner.accessToken, body: body?.() });
    expect(JSON.stringify(r.body)).not.toMatch(/Expected (kind|union|string|integer|boolean|required)/);
  }
});

test("every pattern in the API's schemas is told in words (x-accepts), so no message quotes a regular expression", async () => {
  const doc = (await s.api("GET", "/openapi.json")).body;
  const bare: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${path}/${i}`));
    if (typeof node !== "object" || node === null) return;
    const o = node as Record<string, unknown>;
    if (typeof o.pattern === "string" && typeof o["x-accepts"] !== "string") bare.push(`${path}: ${o.pattern}`);
    for (const [k, v] of Object.entries(o)) walk(v, `${path}/${k}`);
  };
  walk(doc, "");
  expect(bare).toEqual([]);
  // The check reads them: a label's pattern is among them.
  expect(JSON.stringify(doc)).toContain('"x-accepts":"a label: ');
});
