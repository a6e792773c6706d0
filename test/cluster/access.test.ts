// A revocation on one server stops on every server at once (issue 13: "a revoked session or worker
// stops on every server at once"). The live sockets' periodic re-check is set to 10 minutes, so
// only the bus's access.changed can close a socket on B within the test's seconds.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, login, type Session } from "../helpers/identity";
import { LiveClient } from "../helpers/live-client";

let cluster: Cluster;
let a: TestServer;
let b: TestServer;
let owner: Session;
const sockets: LiveClient[] = [];
beforeAll(async () => {
  cluster = await startCluster(2, { liveTimeouts: { authMs: 10_000, recheckMs: 10 * 60_000 } });
  [a, b] = cluster.servers;
  owner = await createAdmin(a);
}, 60_000);
afterAll(async () => {
  for (const c of sockets) c.close();
  await cluster?.stop();
});

async function subscribedOn(s: TestServer, token: string): Promise<LiveClient> {
  const c = await LiveClient.open(s, token);
  sockets.push(c);
  await c.subscribe(owner.orgId);
  return c;
}

test("a session signed out on A closes its live socket on B at once; another sign-in's socket on B stays", async () => {
  const u = await addMember(a, owner, "member");
  const other = await login(a, u.email);
  const gone = await subscribedOn(b, u.accessToken);
  const stays = await subscribedOn(b, other.accessToken);
  expect((await a.api("POST", "/auth/logout", { token: u.accessToken })).status).toBe(204);
  expect(await gone.closedWithin()).toBe(4401);
  expect(gone.messages.at(-1)).toMatchObject({ type: "error", code: "unauthorized" });
  expect(await stays.ask({ type: "ping" })).toMatchObject({ type: "pong" });
  // The revoked access token is refused on B's HTTP side too.
  expect((await b.api("GET", `/orgs/${owner.orgId}/tasks`, { token: u.accessToken })).status).toBe(401);
  expect((await b.api("GET", `/orgs/${owner.orgId}/tasks`, { token: other.accessToken })).status).toBe(200);
});

test("an API token deleted on A is refused on B at its next request, and its socket on B closes at once", async () => {
  const u = await addMember(a, owner, "member");
  const made = await a.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "ci", orgId: owner.orgId } });
  expect(made.status).toBe(201);
  // B has read (and cached) the token before it is deleted.
  expect((await b.api("GET", `/orgs/${owner.orgId}/tasks`, { token: made.body.token })).status).toBe(200);
  const viaToken = await subscribedOn(b, made.body.token);
  const viaSession = await subscribedOn(b, u.accessToken);
  expect((await a.api("DELETE", `/me/tokens/${made.body.id}`, { token: u.accessToken })).status).toBe(204);
  expect(await viaToken.closedWithin()).toBe(4401);
  expect((await b.api("GET", `/orgs/${owner.orgId}/tasks`, { token: made.body.token })).status).toBe(401);
  // The owner's session sockets are not the token's.
  expect(await viaSession.ask({ type: "ping" })).toMatchObject({ type: "pong" });
  expect(viaSession.closeCode).toBeNull();
});

test("a member removed on A: their session socket on B drops the org at once", async () => {
  const u = await addMember(a, owner, "member");
  const c = await subscribedOn(b, u.accessToken);
  expect((await a.api("DELETE", `/orgs/${owner.orgId}/members/${u.userId}`, { token: owner.accessToken })).status).toBe(204);
  expect(await c.next((m) => m.type === "error")).toMatchObject({ code: "forbidden", orgId: owner.orgId });
  expect((await b.api("GET", `/orgs/${owner.orgId}/tasks`, { token: u.accessToken })).status).toBe(404); // another org is as good as missing
});
