// The probes' world: one server, org A with a person of each role, an aot_ token, a worker and
// a row of each kind the routes name; org B with its owner. Made through the real API.
import { expect } from "bun:test";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { makeWorker } from "../workers/helpers";
import type { Known } from "./schema";

export interface World {
  owner: Session;
  admin: Session;
  member: Session;
  viewer: Session;
  outsider: Session;
  /** aot_ token of the member (role member) in org A. */
  token: string;
  workerCredential: string;
  /** Values for the routes' path parameters: real rows of org A, or rows nobody needs after. */
  params: Record<string, string>;
  /** Values for body fields of these names. */
  known: Known;
}

async function created(s: TestServer, method: string, path: string, token: string, body: unknown) {
  const r = await s.api(method, path, { token, body });
  expect([200, 201]).toContain(r.status);
  return r.body;
}

export async function makeWorld(s: TestServer): Promise<World> {
  const owner = await createAdmin(s);
  const [admin, member, viewer, victim] = [await addMember(s, owner, "admin"), await addMember(s, owner, "member"), await addMember(s, owner, "viewer"), await addMember(s, owner, "member")];
  const outsider = await newOrg(s);
  const token = await makeToken(s, member);
  const org = `/orgs/${owner.orgId}`;
  const project = await created(s, "POST", `${org}/projects`, owner.accessToken, { name: "probe" });
  const repo = await created(s, "POST", `${org}/projects/${project.id}/repositories`, owner.accessToken, { url: "https://github.com/acme/widgets.git" });
  const task = await created(s, "POST", `${org}/tasks`, owner.accessToken, { projectId: project.id, title: "t", prompt: "p" });
  const integration = await created(s, "POST", `${org}/integrations`, owner.accessToken, { kind: "signed_json", name: "probe", projectId: project.id });
  const spareToken = await created(s, "POST", "/me/tokens", owner.accessToken, { name: "spare", orgId: owner.orgId });
  const worker = await makeWorker(s, owner.orgId, { name: "probe-worker" });
  const spareWorker = await makeWorker(s, owner.orgId, { name: "spare-worker" });
  return {
    owner,
    admin,
    member,
    viewer,
    outsider,
    token,
    workerCredential: worker.credential,
    params: {
      orgId: owner.orgId,
      projectId: project.id,
      repositoryId: repo.repository.id,
      taskId: task.id,
      workerId: spareWorker.workerId,
      userId: victim.userId,
      id: integration.id,
      deliveryId: "dlv_00000000000000000000000000",
      name: "report.txt",
      runId: "rdy_00000000000000000000000000",
      userCode: "BCDF-GHJK",
      tokenId: spareToken.id,
    },
    known: {
      orgId: owner.orgId,
      projectId: project.id,
      fromProjectId: project.id,
      url: "https://github.com/acme/probe.git",
      callbackUrl: "https://hooks.example.test/ao",
      email: victim.email,
      userCode: "BCDF-GHJK",
      code: "000000",
    },
  };
}

/** The operation's path with its parameters filled in from the world. */
export function fillPath(path: string, w: World): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    // /me/tokens/{id} names a token; everywhere else {id} is an integration.
    if (name === "id" && path.startsWith("/api/v1/me/tokens")) return w.params.tokenId;
    const v = w.params[name];
    if (!v) throw new Error(`no value for path parameter ${name} in ${path}`);
    return v;
  });
}
