// Authorization matrix (issue 12, operations 5): every operation of /api/v1/openapi.json, sent by
// each kind of caller, answers the status class SPEC §3 and §4 allow. The operations come from the
// document; what each needs comes from the table below, and an operation missing from it fails.
// Bodies are valid for their schema, so the answer depends on the caller alone.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { can, type Permission, type Role } from "../../src/modules/orgs/roles";
import { bodySchema, validValue, type Schema } from "./schema";
import { fillPath, makeWorld, type World } from "./world";

type Need =
  | { kind: "public" } // no credential needed; only "no 5xx" is asked of it here
  | { kind: "socket" } // a WebSocket upgrade, probed in test/live
  | { kind: "any" } // any signed-in user or aot_ token
  | { kind: "session" } // a person's session; aot_ tokens get 403
  | { kind: "admin" } // instance administrators' sessions
  | { kind: "worker" } // an aow_ worker credential only
  | { kind: "metrics" } // AO_METRICS_TOKEN only (test/server/metrics.test.ts)
  | { kind: "org"; permission: Permission | "member" };

const org = (permission: Permission | "member"): Need => ({ kind: "org", permission });

/** First match wins: [method or *, path pattern, need]. */
const NEEDS: [string, RegExp, Need][] = [
  ["GET", /^\/api\/v1\/(health|setup)$/, { kind: "public" }],
  ["POST", /^\/api\/v1\/(setup|auth\/(login|refresh|device\/(start|poll))|worker\/pair(\/poll)?|hooks\/\{id\})$/, { kind: "public" }],
  // GitHub's browser redirects: the flow's single-use state is the credential.
  ["GET", /^\/api\/v1\/codehost\/(app|installations|user)\/callback$/, { kind: "public" }],
  ["GET", /^\/api\/v1\/ws$/, { kind: "socket" }],
  ["GET", /^\/metrics$/, { kind: "metrics" }],
  ["*", /^\/api\/v1\/worker\//, { kind: "worker" }],
  ["*", /^\/api\/v1\/admin\//, { kind: "admin" }],
  ["GET", /^\/api\/v1\/(me|orgs)$/, { kind: "any" }],
  // A person's own name: sessions only, like the rest of /me/.
  ["PATCH", /^\/api\/v1\/me$/, { kind: "session" }],
  ["*", /^\/api\/v1\/(me\/|auth\/|pairing\/|orgs$)/, { kind: "session" }],
  ["GET", /^\/api\/v1\/orgs\/\{orgId\}\/(integrations|plugins)/, org("settings.manage")],
  ["GET", /^\/api\/v1\/orgs\/\{orgId\}/, org("member")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/codehost\/user$/, org("member")],
  // The seed's table: any member (SPEC §3: any role).
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/projects\/\{projectId\}\/readiness$/, org("member")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/codehost\/repositories$/, org("project.create")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/codehost\//, org("settings.manage")],
  ["*", /^\/api\/v1\/orgs\/\{orgId\}$/, org("settings.manage")],
  ["*", /^\/api\/v1\/orgs\/\{orgId\}\/(members|integrations|plugins)/, org("settings.manage")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/projects$/, org("project.create")],
  ["DELETE", /^\/api\/v1\/orgs\/\{orgId\}\/projects\/\{projectId\}$/, org("project.delete")],
  ["*", /^\/api\/v1\/orgs\/\{orgId\}\/projects\//, org("project.update")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/tasks$/, org("task.create")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/tasks\/\{taskId\}\/apply-plan$/, org("task.create")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/tasks\//, org("task.control")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/workers\/\{workerId\}\/approve$/, org("worker.approve")],
  ["*", /^\/api\/v1\/orgs\/\{orgId\}\/workers\//, org("worker.manage")],
  ["POST", /^\/api\/v1\/orgs\/\{orgId\}\/discovered\/(accept|dismiss)$/, org("member")],
];

/**
 * Writes the routes let any member make, viewers included, as the seed's tables give them ("member":
 * any role, SPEC §3). A new write open to viewers must be added here on purpose.
 */
const VIEWER_WRITES = new Set<string>([
  // A link to connect one's own GitHub account; it changes nothing of the org.
  "POST /api/v1/orgs/{orgId}/codehost/user",
  "POST /api/v1/orgs/{orgId}/projects/{projectId}/readiness",
  "POST /api/v1/orgs/{orgId}/discovered/accept",
  "POST /api/v1/orgs/{orgId}/discovered/dismiss",
]);

/** Where a route asks more than its row: pairing a worker into org A (named in the body) needs more than a viewer. */
const OVERRIDES: Record<string, Partial<Record<Caller, Expect>>> = {
  "POST /api/v1/pairing/approve": { viewer: 403 },
};

function needOf(method: string, path: string): Need | null {
  for (const [m, pattern, need] of NEEDS) if ((m === "*" || m === method) && pattern.test(path)) return need;
  return null;
}

type Caller = "anonymous" | "owner" | "admin" | "member" | "viewer" | "token" | "outsider" | "worker";
const CALLERS: Caller[] = ["anonymous", "worker", "outsider", "viewer", "token", "member", "admin", "owner"];

/** What a caller may get: "pass" (past authorization: not 401/403), a refusal status, or anything but 5xx. */
type Expect = "pass" | "any" | 401 | 403 | 404 | "refused";

function expected(need: Need, caller: Caller): Expect {
  if (need.kind === "public") return "any";
  if (caller === "anonymous") return 401;
  if (need.kind === "worker") return caller === "worker" ? "pass" : "refused";
  if (caller === "worker") return 403; // an aow_ credential is refused on every person's route
  const role: Role | null = caller === "token" ? "member" : caller === "outsider" ? null : caller;
  switch (need.kind) {
    case "any":
      return "pass";
    case "session":
      return caller === "token" ? 403 : "pass";
    case "admin":
      return caller === "owner" ? "pass" : 403; // the owner of org A is the instance administrator
    case "org":
      if (caller === "outsider") return 404; // never leak that org A exists
      return can(role!, need.permission) ? "pass" : 403;
    default:
      return "any";
  }
}

interface Operation {
  method: string;
  path: string;
  op: Schema;
}

const signsOut = (o: { method: string; path: string }) => o.path === "/api/v1/auth/logout" || (o.method === "DELETE" && o.path === "/api/v1/me/sessions");

let s: TestServer;
let w: World;
let operations: Operation[];
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  const doc = (await s.api("GET", "/openapi.json")).body;
  operations = Object.entries<Record<string, Schema>>(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
  // Signing out ends the caller's session (everywhere, for DELETE /me/sessions): those rows go last.
  operations.sort((a, b) => Number(signsOut(a)) - Number(signsOut(b)));
});
afterAll(() => s.stop());

function credentialOf(caller: Caller): string | undefined {
  switch (caller) {
    case "anonymous":
      return undefined;
    case "token":
      return w.token;
    case "worker":
      return w.workerCredential;
    default:
      return w[caller].accessToken;
  }
}

function bodyFor(op: Schema): unknown {
  const schema = bodySchema(op);
  return schema ? validValue(schema, w.known) : undefined;
}

describe("authorization matrix", () => {
  test("every operation in the document has a row in the table", () => {
    expect(operations.length).toBeGreaterThan(50);
    expect(operations.filter((o) => !needOf(o.method, o.path)).map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });

  test("no viewer writes beyond the listed ones (SPEC §3: viewers have none of the write permissions)", () => {
    const viewerWrites = operations.filter((o) => {
      const need = needOf(o.method, o.path);
      return o.method !== "GET" && need?.kind === "org" && can("viewer", need.permission);
    });
    expect(viewerWrites.map((o) => `${o.method} ${o.path}`).sort()).toEqual([...VIEWER_WRITES].sort());
  });

  test("each caller on each operation", async () => {
    const failures: string[] = [];
    let requests = 0;
    // Callers whose session a sign-out row ended: the next sign-out row must refuse them (401);
    // DELETE /me/sessions with a live session is covered in test/identity/account.test.ts.
    const ended = new Set<string>();
    for (const { method, path, op } of operations) {
      const need = needOf(method, path)!;
      if (need.kind === "socket" || need.kind === "metrics") continue;
      const url = fillPath(path, w).replace(/^\/api\/v1/, "");
      for (const caller of CALLERS) {
        const want = ended.has(caller) ? 401 : (OVERRIDES[`${method} ${path}`]?.[caller] ?? expected(need, caller));
        const body = bodyFor(op);
        const r = await s.api(method, url, { token: credentialOf(caller), body, raw: method === "PUT" && body === undefined ? "x" : undefined });
        requests++;
        if (signsOut({ method, path }) && r.status < 300) ended.add(caller);
        const row = `${method} ${path} as ${caller}: ${r.status} ${JSON.stringify(r.body)?.slice(0, 160)} (wanted ${want})`;
        // On PostgreSQL the server makes no backups of its own (501 backup_unavailable, by design).
        const unavailable = onPostgres && path === "/api/v1/admin/backup" && r.status === 501 && r.body?.error?.code === "backup_unavailable";
        if (r.status >= 500 && !unavailable) failures.push(row);
        else if (want === "pass" && (r.status === 401 || r.status === 403)) failures.push(row);
        else if (want === "refused" && r.status !== 401 && r.status !== 403) failures.push(row);
        else if (typeof want === "number" && r.status !== want) failures.push(row);
        else if (r.status >= 400 && typeof r.body?.error?.code !== "string") failures.push(`${row}: not the error format`);
        // Other orgs' and viewers' refusals never come with the data.
        if (((caller === "outsider" && need.kind === "org") || want === 403 || want === 401) && r.status < 300) failures.push(`${row}: 2xx for a refused caller`);
      }
    }
    expect(requests).toBeGreaterThan(400);
    expect(failures).toEqual([]);
  }, 60_000);
});
