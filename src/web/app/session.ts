// Who is signed in and in which organization they work, as signals every page reads. The
// organization in use is the one the address names (?org=), else the one last picked in this
// browser, else the first; the sidebar's switcher changes it.
import { computed, signal } from "@preact/signals";
import { ApiError, api, listAll, refresh, watchSession } from "./api";
import type { Org, Role, User } from "./types";

/** undefined: not known yet (the session is being restored); null: nobody is signed in. */
export const user = signal<User | null | undefined>(undefined);
watchSession((u, ended) => {
  user.value = u;
  if (!u) forgetOrgs();
  sessionEnded.value = !u && !!ended;
});
/** The server ended the sign-in (revoked elsewhere, expired): the sign-in form says so. */
export const sessionEnded = signal(false);

/**
 * The person's organizations; undefined until loaded, also while they cannot be (never read that
 * as "none": orgsError says why, and the pages that need them say they could not be loaded).
 */
export const orgs = signal<Org[] | undefined>(undefined);
/** Why the last load of the organizations failed; null once one succeeds. */
export const orgsError = signal<unknown>(null);
/** Whether they are being asked for now (Retry waits meanwhile). */
export const orgsLoading = signal(false);
const PICKED = "ao.org";
const picked = signal<string | null>(readPicked());

function readPicked(): string | null {
  try {
    return localStorage.getItem(PICKED);
  } catch {
    return null;
  }
}

/** The id of the organization in use (one of the person's; null before they load or when there is none). */
export const orgId = computed<string | null>(() => {
  const list = orgs.value ?? [];
  const p = picked.value;
  return p && list.some((o) => o.id === p) ? p : (list[0]?.id ?? null);
});
/** The organization in use, when it is one of the person's. */
export const org = computed<Org | null>(() => orgs.value?.find((o) => o.id === orgId.value) ?? null);
export const role = computed<Role | null>(() => org.value?.role ?? null);

/** Makes `id` the organization in use (remembered in this browser when it is one of the person's). */
export function useOrg(id: string) {
  if (picked.value === id) return;
  picked.value = id;
  try {
    if (orgs.value?.some((o) => o.id === id)) localStorage.setItem(PICKED, id);
  } catch {}
}

/** Restores the session from the cookie (once per page load), then loads the organizations. */
let restoring: Promise<void> | null = null;
export function restoreSession(): Promise<void> {
  restoring ??= refresh().then(
    () => {},
    (err) => {
      // The server is unreachable or failing: the sign-in form says so.
      user.value = null;
      sessionError.value = err;
    },
  );
  return restoring;
}
export const sessionError = signal<unknown>(null);

/** Whether the server awaits its first-run setup (no account exists yet): signing in cannot work then. */
export const setupPending = signal(false);
export async function checkSetup(): Promise<void> {
  try {
    setupPending.value = (await api<{ required: boolean }>("GET", "/setup")).required;
  } catch {
    // Unknown: the form says nothing more than it did (an unreachable server shows on sign-in).
  }
}

// A failed load is asked again by itself after a growing pause (and at once by retryOrgs).
const FIRST_RETRY_MS = 2000;
const LAST_RETRY_MS = 60_000;
let retryIn = FIRST_RETRY_MS;
let retryTimer: ReturnType<typeof setTimeout> | null = null;
/** Bumped by each load and by signing out: an older answer is dropped. */
let loads = 0;

/** Loads the person's organizations (again): after signing in, and after a change to them. */
export async function loadOrgs(): Promise<void> {
  const run = ++loads;
  stopRetrying();
  orgsLoading.value = true;
  try {
    const list = await listAll<Org>("/orgs");
    if (run !== loads) return;
    orgs.value = list;
    orgsError.value = null;
    retryIn = FIRST_RETRY_MS;
  } catch (err) {
    if (run !== loads) return;
    orgsError.value = err;
    retryTimer = setTimeout(() => void loadOrgs(), retryIn);
    retryIn = Math.min(retryIn * 2, LAST_RETRY_MS);
  } finally {
    if (run === loads) orgsLoading.value = false;
  }
}

/** Asks again now for organizations whose last load failed (a Retry, a move to another page). */
export function retryOrgs() {
  if (orgsError.value && !orgsLoading.value) void loadOrgs();
}

function stopRetrying() {
  if (retryTimer) clearTimeout(retryTimer);
  retryTimer = null;
}

function forgetOrgs() {
  loads++;
  stopRetrying();
  retryIn = FIRST_RETRY_MS;
  orgs.value = undefined;
  orgsError.value = null;
  orgsLoading.value = false;
}

/** Roles that may change things (create tasks, act on them); viewers only read. */
export const canWrite = (r: Role | null) => r === "owner" || r === "admin" || r === "member";
export const canAdmin = (r: Role | null) => r === "owner" || r === "admin";

/**
 * A record in whichever of the person's organizations holds it, `first` asked first (a link from a
 * teammate in another organization opens there); null when every one answers 404.
 */
export async function findInMyOrgs<T>(list: Org[], first: string | null, path: (orgId: string) => string): Promise<{ org: Org; item: T } | null> {
  const inOrder = [...list].sort((a, b) => (a.id === first ? -1 : b.id === first ? 1 : 0));
  let failure: unknown = null;
  // A few organizations at a time: most people have one or two.
  for (let i = 0; i < inOrder.length; i += 6) {
    const batch = inOrder.slice(i, i + 6);
    const results = await Promise.allSettled(batch.map((o) => api<T>("GET", path(encodeURIComponent(o.id)))));
    for (const [j, r] of results.entries()) {
      if (r.status === "fulfilled") return { org: batch[j]!, item: r.value };
      if (!(r.reason instanceof ApiError && r.reason.status === 404)) failure ??= r.reason;
    }
  }
  if (failure) throw failure;
  return null;
}
