// Run by relay-faults.test.ts as its own process, to be killed with SIGKILL: a server on the
// given data directory whose task completes with its callback in flight. Prints what the test
// needs as one JSON line, then waits to be killed.
import { startTestServer } from "../helpers/server";
import { deliver, makeIntegration, makeWorld, putInState, svcSignature } from "./fixtures";

const dataDir = process.env.AO_CRASH_DATA_DIR!;
const callbackUrl = process.env.AO_CRASH_CALLBACK_URL!;
// A long timeout: the try must still be in flight when the process is killed.
const s = await startTestServer({ dataDir, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 60_000 } });
const w = await makeWorld(s);
const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl });
const body = JSON.stringify({ title: "Ship it", prompt: "x", ref: "crash-1" });
const signature = svcSignature(i.secret, body);
const created = await deliver(s, i.id, body, { "x-svc-signature": signature, "x-svc-delivery": "crash-1" });
await putInState(s, created.body.taskId, "running");
await putInState(s, created.body.taskId, "completed");
console.log(JSON.stringify({ orgId: w.owner.orgId, token: w.owner.accessToken, integrationId: i.id, secret: i.secret, taskId: created.body.taskId, body }));
setInterval(() => {}, 1 << 30);
