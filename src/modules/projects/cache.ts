// What the worker paths read of a project on every offer and claim (its policy's worker labels,
// the project and repositories a claim carries), and the policy every task record shows, kept in
// memory. Every write to a project or its repositories in this process forgets them after it
// commits (writeProjects); writes by another process are seen through the database's
// data_version (db/cache.ts).
import type { Core } from "../../server/core";
import { forgetEverywhere, RowCache } from "../../db/cache";
import { get, type Q } from "../../db/query";

const caches = new WeakMap<Core, RowCache<unknown>>();

function cacheOf(core: Core): RowCache<unknown> {
  let c = caches.get(core);
  if (!c) caches.set(core, (c = new RowCache<unknown>(core)));
  return c;
}

/** `key` names what is cached of which project, e.g. `labels:<projectId>`. */
export function projectCached<V>(core: Core, key: string, load: () => V | null): V | null {
  return cacheOf(core).get(key, load) as V | null;
}

/**
 * projectCached for a program: a hit returns without a query; a miss runs `load`, cached when not
 * null and no project write cleared the cache while it read (RowCache.readThrough).
 */
export function projectCachedQ<V>(core: Core, key: string, load: () => Q<V | null>): Q<V | null> {
  return cacheOf(core).readThrough(key, load) as Q<V | null>;
}

/** A project's policy, parsed (null for an unknown project); cached, so callers only read it. */
export function projectPolicy(core: Core, projectId: string): Q<unknown> {
  return projectCachedQ(core, `policy:${projectId}`, function* () {
    const row = yield* get<{ policy: string }>("SELECT policy FROM projects WHERE id = ?", projectId);
    return row ? (JSON.parse(row.policy) as unknown) : null;
  });
}

/** After any write to projects or repositories (policy, name, knowledge, archive, repositories). */
export function forgetProjects(core: Core) {
  caches.get(core)?.clear();
  forgetEverywhere(core);
}

/** The bus channel of policyChanged. */
const POLICY_CHANGED = "project.policyChanged";

/**
 * Announces, after the commit, that a project's policy was written: here at once (its budget and
 * labels are read afresh, the queue looked at again, followed queued tasks sent again), and on
 * PostgreSQL's other servers when the bus brings it, after the forget of their cached projects
 * that writeProjects published before it (one publisher's messages arrive in order).
 */
export function policyChanged(core: Core, orgId: string, projectId: string) {
  core.events.emit("project.policyChanged", { orgId, projectId });
  if (core.sqlite === null) core.bus.publish(POLICY_CHANGED, { from: core.instanceId, orgId, projectId });
}

/** Emits the other servers' policyChanged here (PostgreSQL; nothing on SQLite). */
export function relayPolicyChanges(core: Core) {
  if (core.sqlite !== null) return;
  core.bus.on(POLICY_CHANGED, ({ from, orgId, projectId }: { from: unknown; orgId: unknown; projectId: unknown }) => {
    // The bus delivers to the publishing server too, which emitted already.
    if (from !== core.instanceId && typeof orgId === "string" && typeof projectId === "string") core.events.emit("project.policyChanged", { orgId, projectId });
  });
}

/**
 * Runs a program that writes projects or repositories in one transaction, and forgets the cached
 * rows after it commits (or fails): a read between the forget and the commit cannot leave the old
 * row in the cache.
 */
export async function writeProjects<T>(core: Core, program: Q<T>): Promise<T> {
  try {
    return await core.store.write(program);
  } finally {
    forgetProjects(core);
  }
}
