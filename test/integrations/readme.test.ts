// The README's integration examples run as written: the bash sender makes a task, and the bash
// and TypeScript verifiers accept a real callback (and refuse a forged one).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeIntegration, makeWorld, putInState, Receiver, type World } from "./fixtures";

const README = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");

/** The fenced block of the README whose text contains `marker`. */
function block(marker: string): string {
  const blocks = [...README.matchAll(/```(?:sh|ts|bash)\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.find((b) => b.includes(marker));
  if (!found) throw new Error(`README has no code block with ${marker}`);
  return found;
}

async function bash(script: string, env: Record<string, string>) {
  const proc = Bun.spawn(["bash", "-c", script], { env: { PATH: process.env.PATH!, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { out, err, code };
}

let s: TestServer;
let w: World;
const dir = mkdtempSync(join(tmpdir(), "ao-readme-"));
beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true });
  w = await makeWorld(s);
});
afterAll(async () => {
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("the CI example signs a delivery the server accepts; run twice, the second is a duplicate; the verifiers accept its callback", async () => {
  const rx = new Receiver();
  try {
    const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: rx.url() });
    const env = { AO_HOOK_URL: `${s.url}/api/v1/hooks/${i.id}`, AO_HOOK_SECRET: i.secret };
    const script = block("# ao: send a signed JSON delivery");
    const first = await bash(script, env);
    expect(first.err).toBe("");
    const created = JSON.parse(first.out);
    expect(created).toEqual({ status: "created", taskId: expect.stringMatching(/^tsk_/) });
    expect(JSON.parse((await bash(script, env)).out)).toEqual({ status: "duplicate", taskId: created.taskId });

    await putInState(s, created.taskId, "running");
    await putInState(s, created.taskId, "completed");
    await rx.waitFor(1);
    const { headers, body } = rx.requests[0];
    expect(JSON.parse(body).ref).toBe("nightly-1234");

    const verifier = block("# ao: verify a callback");
    const good = await bash(verifier, { SIGNATURE: headers["x-svc-signature"], BODY: body, AO_CALLBACK_SECRET: i.secret });
    expect(good.out.trim()).toBe("valid");
    const forged = await bash(verifier, { SIGNATURE: headers["x-svc-signature"], BODY: body.replace("completed", "failed"), AO_CALLBACK_SECRET: i.secret });
    expect(forged.out.trim()).toBe("invalid");
    expect(forged.code).toBe(1);

    const file = join(dir, "verify.ts");
    writeFileSync(file, block("export function verifyCallback"));
    const { verifyCallback } = await import(file);
    expect(verifyCallback(i.secret, headers["x-svc-signature"], body)).toBe(true);
    expect(verifyCallback("aos_other", headers["x-svc-signature"], body)).toBe(false);
    expect(verifyCallback(i.secret, headers["x-svc-signature"], body + " ")).toBe(false);
  } finally {
    await rx.stop();
  }
});
