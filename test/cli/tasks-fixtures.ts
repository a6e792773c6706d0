// What the `ao task` tests share: a real server, its admin signed in through a session file (as
// `ao login` leaves one) and a project "Web Shop" with a repository; tasks made over the API and moved along
// through the server's task store as a worker would.
import { expect } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, login, type Session } from "../helpers/identity";
import { newConfigDir, runCli, seedSession, type CliResult } from "./helpers";
import { changeTask, type EventInput, type TaskPatch } from "../../src/modules/tasks/store";
import type { TaskRow } from "../../src/modules/tasks/record";

export interface TaskCli {
  s: TestServer;
  owner: Session;
  /** The environment that points `ao` at the admin's session file. */
  env: Record<string, string>;
  /** The project "Web Shop". */
  projectId: string;
  /** `ao ...args` as the admin. */
  ao(...args: string[]): Promise<CliResult>;
  /** A new task in the project, made over the API: its id. */
  newTask(title?: string, extra?: Record<string, unknown>): Promise<string>;
  /** What a worker would do: change the task's state and append timeline events. */
  move(taskId: string, to: TaskRow["status"], patch?: TaskPatch, extra?: EventInput[]): ReturnType<typeof changeTask>;
}

export async function startTaskCli(): Promise<TaskCli> {
  const s = await startTestServer();
  const owner = await createAdmin(s);
  const dir = newConfigDir();
  seedSession(dir, s.url, { ...(await login(s, owner.email)), email: owner.email, orgId: owner.orgId });
  const env = { AO_CONFIG_DIR: dir };
  // With a repository: a review needs one to review.
  const p = await s.api("POST", `/orgs/${owner.orgId}/projects`, { body: { name: "Web Shop", repositories: [{ url: "https://example.com/acme/shop.git" }] }, token: owner.accessToken });
  expect(p.status).toBe(201);
  const projectId: string = p.body.id;
  return {
    s,
    owner,
    env,
    projectId,
    ao: (...args) => runCli(args, env),
    async newTask(title = "a task", extra = {}) {
      const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { body: { projectId, title, prompt: "do it", ...extra }, token: owner.accessToken });
      expect(r.status).toBe(201);
      return r.body.id;
    },
    move: (taskId, to, patch = {}, extra = []) =>
      changeTask(s.core, owner.orgId, taskId, (row) => ({
        patch: { status: to, ...(to === "running" && !row.started_at ? { attempt: row.attempt + 1, started_at: new Date().toISOString() } : {}), ...patch },
        events: [...extra, { type: "status", data: { from: row.status, to } }],
      })),
  };
}

/** A log line for the timeline. */
export const log = (line: string): EventInput => ({ type: "log", data: { line } });
