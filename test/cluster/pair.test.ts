// Two servers on one PostgreSQL database share users, sessions and the master key: a session made
// on one is honoured on the other (the JWT key derives from the shared master key).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import { createAdmin, newOrg } from "../helpers/identity";

let cluster: Cluster;
beforeAll(async () => {
  cluster = await startCluster(2);
}, 60_000);
afterAll(() => cluster?.stop());

test("a session made on one server works on the other", async () => {
  const [a, b] = cluster.servers;
  await createAdmin(a);
  const owner = await newOrg(a);
  const me = await b.api("GET", "/me", { token: owner.accessToken });
  expect(me.status).toBe(200);
  const org = await b.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken });
  expect(org.status).toBe(200);
});
