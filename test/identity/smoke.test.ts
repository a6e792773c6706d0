import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, signUp } from "../helpers/identity";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

test("helpers make people through the API", async () => {
  const owner = await createAdmin(s);
  const dev = await addMember(s, owner, "member");
  const other = await newOrg(s);
  const tok = await makeToken(s, dev);
  expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: tok })).status).toBe(200);
  expect((await s.api("GET", `/orgs/${other.orgId}`, { token: tok })).status).toBe(403);
  expect((await s.api("GET", `/orgs/${other.orgId}`, { token: dev.accessToken })).status).toBe(404);
  const su = await signUp(s, { orgId: other.orgId, role: "viewer" });
  expect((await s.api("GET", `/orgs/${other.orgId}`, { token: su.accessToken })).body.role).toBe("viewer");
  const me = await s.api("GET", "/me", { token: tok });
  expect(me.body.via.type).toBe("token");
});
