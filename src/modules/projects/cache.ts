// What the worker paths read of a project on every offer and claim (its policy's worker labels,
// the project and repositories a claim carries), kept in memory. Every write to a project or its
// repositories in this process calls forgetProjects after it; writes by another process are seen
// through the database's data_version (db/cache.ts).
import type { Core } from "../../server/core";
import { RowCache } from "../../db/cache";

const caches = new WeakMap<Core, RowCache<unknown>>();

/** `key` names what is cached of which project, e.g. `labels:<projectId>`. */
export function projectCached<V>(core: Core, key: string, load: () => V | null): V | null {
  let c = caches.get(core);
  if (!c) caches.set(core, (c = new RowCache<unknown>(core.sqlite)));
  return c.get(key, load) as V | null;
}

/** After any write to projects or repositories (policy, name, knowledge, archive, repositories). */
export function forgetProjects(core: Core) {
  caches.get(core)?.clear();
}
