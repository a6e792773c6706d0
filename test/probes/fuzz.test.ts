// Bad-input fuzzer (issue 12, operations 5): for every operation of the OpenAPI document with a JSON
// body or query parameters, seeded wrong values (missing required fields, wrong types, huge strings,
// unknown fields, negative numbers). Never a 5xx; every 4xx in the error format and changing nothing.
// AO_FUZZ_SEED picks another deterministic sequence.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { bodySchema, prng, wrongBodies, wrongQueries, type Schema } from "./schema";
import { fillPath, makeWorld, type World } from "./world";

const SEED = Number(process.env.AO_FUZZ_SEED ?? 20261123);
const BODIES_PER_OPERATION = 8;
const QUERIES_PER_OPERATION = 4;

let s: TestServer;
let w: World;
let doc: { paths: Record<string, Record<string, Schema>> };
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  doc = (await s.api("GET", "/openapi.json")).body;
});
afterAll(() => s.stop());

/** What the org holds, as its owner reads it: a change here after a 4xx is a half-applied request. */
async function snapshot(): Promise<string> {
  const org = `/orgs/${w.owner.orgId}`;
  const lists = await Promise.all(
    [`${org}/tasks?limit=200`, `${org}/projects?limit=200&archived=true`, `${org}/integrations?limit=200`, `${org}/members?limit=200`, `${org}/workers?limit=200`, "/me/tokens?limit=200"].map(
      (path) => s.api("GET", path, { token: w.owner.accessToken }),
    ),
  );
  return JSON.stringify(lists.map((r) => r.body));
}

function credentialFor(path: string): string | undefined {
  if (path.startsWith("/api/v1/worker/") && !path.startsWith("/api/v1/worker/pair")) return w.workerCredential;
  return w.owner.accessToken;
}

describe("bad input", () => {
  test(
    "no 5xx; 4xx in the error format and nothing changed",
    async () => {
      const random = prng(SEED);
      const failures: string[] = [];
      let sent = 0;
      let before = await snapshot();
      for (const [path, ops] of Object.entries(doc.paths)) {
        if (!path.startsWith("/api/v1/") || path === "/api/v1/ws") continue;
        for (const [m, op] of Object.entries(ops)) {
          const method = m.toUpperCase();
          const url = fillPath(path, w).replace(/^\/api\/v1/, "");
          const schema = bodySchema(op);
          const cases = [
            ...(schema?.type === "object" ? wrongBodies(schema, w.known, random, BODIES_PER_OPERATION).map((c) => ({ ...c, url, body: c.value })) : []),
            ...wrongQueries(op.parameters ?? [], random, QUERIES_PER_OPERATION).map((c) => ({ ...c, url: `${url}?${c.value}`, body: schema ? {} : undefined })),
          ];
          for (const c of cases) {
            const r = await s.api(method, c.url, { token: credentialFor(path), body: c.body });
            sent++;
            const row = `${method} ${path} with ${c.why}: ${r.status} ${JSON.stringify(r.body)?.slice(0, 200)}`;
            if (r.status >= 500) failures.push(row);
            if (r.status >= 400 && r.status < 500) {
              const e = r.body?.error;
              if (typeof e?.code !== "string" || typeof e?.message !== "string") failures.push(`${row}: not the error format`);
              const after = await snapshot();
              if (after !== before) failures.push(`${row}: the org's data changed`);
              before = after;
            } else {
              // A value the schema allows after all (a big number, an empty query): the new state is the baseline.
              before = await snapshot();
            }
          }
        }
      }
      expect(sent).toBeGreaterThan(200);
      expect(failures).toEqual([]);
    },
    120_000,
  );
});
