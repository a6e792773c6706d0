// The upgrade that makes the GitHub app's old tasks of other organizations the app's (migration
// app_task_creators), on the store under test: a database as the previous version left it, with a
// task the app's webhooks made in another organization (the owner's integration in created_by,
// source and the created event's actor), one they made in the owning organization, one of an
// ordinary integration and one of a person; the first is rewritten as such tasks are now made,
// the others are left byte for byte, and without an app row nothing changes.
import { afterEach, describe, expect, test } from "bun:test";
import { databaseBefore, migrationNamed, type OldDatabase } from "../helpers/migrations";

const NAME = "app_task_creators";
const NOW = "2026-11-01T00:00:00.000Z";
const SLUG = "ao-acme";

let db: OldDatabase | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
});

const source = (integrationId: string, kind: string, deliveryId: string, rest: Record<string, unknown>) =>
  JSON.stringify({ integrationId, integrationKind: kind, deliveryId, ...rest });
const issue = (n: number) => ({ item: { type: "github_issue", id: 1000 + n, url: `https://github.com/acme/widget/issues/${n}`, number: n } });
const actor = (type: string, id: string) => JSON.stringify({ type, id });

/** Two organizations, the app owned by the first, and the four tasks with their events and keys. */
async function seed(old: OldDatabase, { app }: { app: boolean }) {
  for (const org of ["org_owner", "org_other"]) {
    await old.run("INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", org, org, NOW, NOW);
    await old.run("INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES (?, ?, 'p', ?, ?)", `prj_${org}`, org, NOW, NOW);
  }
  const integration = "INSERT INTO integrations (id, org_id, kind, name, project_id, secret_sealed, secret_last4, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'sealed', 'abcd', ?, ?)";
  await old.run(integration, "int_app", "org_owner", "github", "GitHub app", "prj_org_owner", NOW, NOW);
  await old.run(integration, "int_ci", "org_other", "signed_json", "CI", "prj_org_other", NOW, NOW);
  if (app) {
    await old.run(
      `INSERT INTO codehost_apps (id, org_id, integration_id, app_id, slug, name, html_url, client_id, client_secret_sealed, webhook_secret_sealed,
         private_key_sealed, created_by, created_at) VALUES ('app', 'org_owner', 'int_app', 7, ?, 'ao acme', 'https://github.com/apps/ao-acme', 'cid', 's', 's', 's', 'usr_owner', ?)`,
      SLUG,
      NOW,
    );
  }
  const task = `INSERT INTO tasks (id, org_id, project_id, title, prompt, priority, priority_rank, kind, status, created_by_type, created_by_id, source, last_seq, created_at, updated_at)
    VALUES (?, ?, ?, ?, 'do it', 'MEDIUM', 1, 'task', 'queued', ?, ?, ?, ?, ?, ?)`;
  await old.run(task, "tsk_cross", "org_other", "prj_org_other", "Issue 1", "integration", "int_app", source("int_app", "github", "d-1", issue(1)), 3, NOW, NOW);
  await old.run(task, "tsk_owned", "org_owner", "prj_org_owner", "Issue 2", "integration", "int_app", source("int_app", "github", "d-2", issue(2)), 1, NOW, NOW);
  await old.run(task, "tsk_ci", "org_other", "prj_org_other", "CI run", "integration", "int_ci", source("int_ci", "signed_json", "d-3", { ref: "run-1" }), 1, NOW, NOW);
  await old.run(task, "tsk_user", "org_other", "prj_org_other", "By hand", "user", "usr_1", null, 1, NOW, NOW);
  const event = "INSERT INTO task_events (task_id, seq, type, at, actor, data) VALUES (?, ?, ?, ?, ?, ?)";
  const created = JSON.stringify({ from: null, to: "queued" });
  await old.run(event, "tsk_cross", 1, "status", NOW, actor("integration", "int_app"), created);
  await old.run(event, "tsk_cross", 2, "status", NOW, actor("worker", "wrk_1"), JSON.stringify({ from: "queued", to: "running" }));
  await old.run(event, "tsk_cross", 3, "log", NOW, null, JSON.stringify({ line: "hello" }));
  await old.run(event, "tsk_owned", 1, "status", NOW, actor("integration", "int_app"), created);
  await old.run(event, "tsk_ci", 1, "status", NOW, actor("integration", "int_ci"), created);
  await old.run(event, "tsk_user", 1, "status", NOW, actor("user", "usr_1"), created);
  // Each delivery's keys, as inbound.ts writes them with the task.
  const key = "INSERT INTO inbound_keys (integration_id, key, task_id, created_at) VALUES (?, ?, ?, ?)";
  for (const [integrationId, k, taskId] of [
    ["int_app", "delivery:d-1", "tsk_cross"],
    ["int_app", "github:issue:1001", "tsk_cross"],
    ["int_app", "delivery:d-2", "tsk_owned"],
    ["int_app", "github:issue:1002", "tsk_owned"],
    ["int_ci", "delivery:d-3", "tsk_ci"],
  ]) {
    await old.run(key, integrationId, k, taskId, NOW);
  }
}

type Row = Record<string, unknown>;
const tasks = (old: OldDatabase) => old.all<Row>("SELECT * FROM tasks ORDER BY id");
const events = (old: OldDatabase) => old.all<Row>("SELECT * FROM task_events ORDER BY task_id, seq");
const byId = (rows: Row[]) => Object.fromEntries(rows.map((r) => [r.id as string, r]));

describe("upgrading to app_task_creators", () => {
  test("the app's task of another organization becomes the app's; its owner's task, an integration's and a person's stay as they were", async () => {
    db = await databaseBefore(NAME);
    await seed(db, { app: true });
    const tasksBefore = byId(await tasks(db));
    const eventsBefore = await events(db);

    await db.upgrade();
    const after = byId(await tasks(db));
    const { integrationId, ...sourceAfter } = JSON.parse(tasksBefore.tsk_cross!.source as string);
    expect(integrationId).toBe("int_app");
    const cross: Row = { ...after.tsk_cross, source: JSON.parse(after.tsk_cross!.source as string) };
    expect(cross).toEqual({
      ...tasksBefore.tsk_cross,
      created_by_type: "app",
      created_by_id: SLUG,
      source: sourceAfter,
    });
    for (const id of ["tsk_owned", "tsk_ci", "tsk_user"]) expect(after[id]).toEqual(tasksBefore[id]!);

    // Only the events that named the owner's integration: written as the server writes an actor.
    const eventsAfter = await events(db);
    const created = (e: Row) => e.task_id === "tsk_cross" && Number(e.seq) === 1;
    expect(eventsBefore.find(created)).toMatchObject({ actor: actor("integration", "int_app") });
    expect(eventsAfter).toEqual(eventsBefore.map((e) => (created(e) ? { ...e, actor: actor("app", SLUG) } : e)));

    // Applied twice, it finds nothing left to change.
    await db.rerun(migrationNamed(NAME).migration);
    expect(byId(await tasks(db))).toEqual(after);
    expect(await events(db)).toEqual(eventsAfter);
  });

  test("without an app row nothing changes", async () => {
    db = await databaseBefore(NAME);
    await seed(db, { app: false });
    const tasksBefore = await tasks(db);
    const eventsBefore = await events(db);
    await db.upgrade();
    expect(await tasks(db)).toEqual(tasksBefore);
    expect(await events(db)).toEqual(eventsBefore);
  });
});
