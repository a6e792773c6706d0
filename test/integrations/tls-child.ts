// Run by callbacks-https.test.ts in its own process, with NODE_EXTRA_CA_CERTS naming the test-only
// certificate (the trust store is read at process start). A server sends callbacks to an https
// receiver on loopback whose certificate names "localhost" only; prints what arrived, and what
// the delivery log says, as one JSON line.
import { join } from "node:path";
import { startTestServer } from "../helpers/server";
import { get } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeWorld, putInState, svcSignature } from "./fixtures";

const fixtures = join(import.meta.dir, "fixtures");
const received: { host: string | null; delivery: string | null; body: string }[] = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  tls: { cert: Bun.file(join(fixtures, "tls-localhost-cert.pem")), key: Bun.file(join(fixtures, "tls-localhost-key.pem")) },
  async fetch(req) {
    received.push({ host: req.headers.get("host"), delivery: req.headers.get("x-svc-delivery"), body: await req.text() });
    return new Response("ok");
  },
});

const s = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 3000 } });
const w = await makeWorld(s);
const results: Record<string, unknown> = { port: receiver.port };
// By name: the relay connects to the address it resolved, and checks the certificate against the name.
// By address: the certificate does not name 127.0.0.1, so the try fails and nothing arrives.
for (const [label, url] of [
  ["byName", `https://localhost:${receiver.port}/cb`],
  ["byAddress", `https://127.0.0.1:${receiver.port}/cb`],
]) {
  const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: label, projectId: w.projectId, callbackUrl: url });
  const body = JSON.stringify({ title: label, prompt: "x" });
  const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body) });
  await putInState(s, r.body.taskId, "running");
  await putInState(s, r.body.taskId, "completed");
  const row = await eventually(
    () => s.core.store.read(get<{ status: string; attempts: number; last_error: string | null }>("SELECT status, attempts, last_error FROM deliveries WHERE task_id = ? AND attempts > 0", r.body.taskId)),
    10_000,
  );
  results[label] = { row, received: received.splice(0) };
}
console.log(JSON.stringify(results));
await s.stop();
receiver.stop(true);
process.exit(0);
