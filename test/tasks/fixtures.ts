// Scenario helpers for task, project and live tests: a world of two orgs with people of every
// role and tokens, projects and tasks made through the API, and states set through the store
// (the way a worker would move a task), since the worker protocol is tested elsewhere.
import { expect } from "bun:test";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { changeTask, type TaskPatch } from "../../src/modules/tasks/store";
import type { TaskStatus } from "../../src/db/schema";

export interface World {
  owner: Session;
  admin: Session;
  member: Session;
  viewer: Session;
  /** aot_ tokens in the main org: of the owner, and of the viewer. */
  ownerToken: string;
  viewerToken: string;
  /** Another org: its owner and a token there. */
  other: Session;
  otherToken: string;
  project: { id: string };
  otherProject: { id: string };
}

export async function makeWorld(s: TestServer): Promise<World> {
  const owner = await createAdmin(s);
  const [admin, member, viewer, other] = await Promise.all([
    addMember(s, owner, "admin"),
    addMember(s, owner, "member"),
    addMember(s, owner, "viewer"),
    newOrg(s),
  ]);
  const [ownerToken, viewerToken, otherToken] = await Promise.all([makeToken(s, owner), makeToken(s, viewer), makeToken(s, other)]);
  const project = await makeProject(s, owner, `main-${Math.random().toString(36).slice(2, 8)}`);
  const otherProject = await makeProject(s, other, "theirs");
  return { owner, admin, member, viewer, ownerToken, viewerToken, other, otherToken, project, otherProject };
}

export async function makeProject(s: TestServer, who: Pick<Session, "orgId" | "accessToken">, name: string, extra: Record<string, unknown> = {}) {
  const r = await s.api("POST", `/orgs/${who.orgId}/projects`, { token: who.accessToken, body: { name, ...extra } });
  expect(r.status).toBe(201);
  return r.body;
}

export async function makeTask(s: TestServer, who: Pick<Session, "orgId" | "accessToken">, projectId: string, extra: Record<string, unknown> = {}) {
  const r = await s.api("POST", `/orgs/${who.orgId}/tasks`, {
    token: who.accessToken,
    body: { projectId, title: "Fix the login page", prompt: "The login button does nothing.", ...extra },
  });
  if (r.status !== 201) throw new Error(`create task -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** What each state looks like when a worker put the task there. */
const SHAPES: Record<TaskStatus, TaskPatch> = {
  queued: {},
  running: { worker_id: "wkr_test", attempt: 1, started_at: new Date().toISOString() },
  paused: { worker_id: "wkr_test", attempt: 1, paused_from: "running" },
  needs_input: { worker_id: "wkr_test", attempt: 1, needs: JSON.stringify({ kind: "input", message: "Which branch?" }) },
  needs_approval: { worker_id: "wkr_test", attempt: 1, needs: JSON.stringify({ kind: "approval", message: "Push to main?" }) },
  completed: { attempt: 1, summary: "done", finished_at: new Date().toISOString() },
  failed: { attempt: 1, finished_at: new Date().toISOString() },
  cancelled: { finished_at: new Date().toISOString() },
};

/** Puts a task into `status` through the store, with a status event, as a worker's report would. */
export function putInState(s: TestServer, taskId: string, status: TaskStatus, extra: TaskPatch = {}) {
  return changeTask(s.core, null, taskId, (row) => ({
    patch: { ...SHAPES[status], status, ...extra },
    events: [{ type: "status", data: { from: row.status, to: status } }],
  }));
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
