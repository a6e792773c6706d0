// The frame around every signed-in page: a sidebar with the organization switcher, the pages,
// the count of tasks waiting for a person, and the person's menu (Account, Sign out). On a phone
// the sidebar folds away behind a menu button.
import type { ComponentChildren } from "preact";
import { signal, useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { api, signOut } from "./api";
import { address, navigate } from "./router";
import { org, orgId, orgs, useOrg, user } from "./session";
import { disconnect } from "./live";
import { useFollow } from "../components/hooks";
import { WAITING, type Page, type Task } from "./types";

interface NavItem {
  href: string;
  label: string;
  /** Whether the current address is this item's page. */
  here: (path: string, query: URLSearchParams) => boolean;
}

const under = (prefix: string) => (path: string) => path === prefix || path.startsWith(`${prefix}/`);
const NAV: NavItem[] = [
  { href: "/tasks", label: "Tasks", here: (p, q) => under("/tasks")(p) && q.get("view") !== "board" },
  { href: "/tasks?view=board", label: "Board", here: (p, q) => p === "/tasks" && q.get("view") === "board" },
  { href: "/projects", label: "Projects", here: under("/projects") },
  { href: "/workers", label: "Workers", here: under("/workers") },
  { href: "/integrations", label: "Integrations", here: under("/integrations") },
  { href: "/github", label: "GitHub", here: under("/github") },
  { href: "/settings", label: "Settings", here: under("/settings") },
];

export function Shell({ children }: { children: ComponentChildren }) {
  const open = useSignal(false);
  const { path, query } = address.value;
  // A new page closes the phone's menu.
  useEffect(() => {
    open.value = false;
  }, [path, query.toString()]);
  const me = user.value!;
  useWaitingTracker(orgId.value);
  return (
    <div class={`shell${open.value ? " menu-open" : ""}`}>
      <header class="topbar">
        <button type="button" class="icon-button" aria-label="Menu" aria-expanded={open.value} aria-controls="sidebar" onClick={() => (open.value = !open.value)}>
          ☰
        </button>
        <a class="brand" href="/tasks">
          <img src="/assets/icon.svg" alt="" width="22" height="22" /> ao
        </a>
        <WaitingCount compact />
      </header>
      <aside id="sidebar" class="sidebar" aria-label="Navigation">
        <a class="brand" href="/tasks">
          <img src="/assets/icon.svg" alt="" width="22" height="22" /> ao
        </a>
        <OrgSwitcher />
        <nav>
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <a href={item.href} class={item.here(path, query) ? "here" : ""} aria-current={item.here(path, query) ? "page" : undefined}>
                  {item.label}
                  {item.label === "Tasks" ? <WaitingCount /> : null}
                </a>
              </li>
            ))}
            {me.isAdmin ? (
              <li>
                <a href="/admin" class={under("/admin")(path) ? "here" : ""}>
                  Admin
                </a>
              </li>
            ) : null}
          </ul>
        </nav>
        <PersonMenu />
      </aside>
      <div class="scrim" onClick={() => (open.value = false)} />
      <main id="main" class="content">
        {children}
      </main>
    </div>
  );
}

function OrgSwitcher() {
  const list = orgs.value;
  if (!list || list.length === 0) return null;
  const current = orgId.value ?? "";
  return (
    <div class="org-switch">
      <label for="org-switch">Organization</label>
      <select
        id="org-switch"
        value={current}
        onChange={(e) => {
          const id = e.currentTarget.value;
          useOrg(id);
          // The tasks list keeps its organization in the address; other pages read it from the session.
          const { path, query } = address.value;
          if (path === "/tasks") {
            const q = new URLSearchParams({ org: id });
            if (query.get("view")) q.set("view", query.get("view")!);
            navigate(`/tasks?${q}`);
          }
          // A task or project belongs to the organization it was opened in: the other one's list instead.
          else if (path.startsWith("/tasks/")) navigate(`/tasks?${new URLSearchParams({ org: id })}`);
          else if (path.startsWith("/projects/")) navigate("/projects");
        }}
      >
        {list.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name}
          </option>
        ))}
      </select>
    </div>
  );
}

function PersonMenu() {
  const me = user.value!;
  return (
    <details class="person">
      <summary>
        <span class="person-name" id="who-name">{me.name ? `${me.name} (${me.email})` : me.email}</span>
        {org.value ? <span class="muted person-role">{org.value.role}</span> : null}
      </summary>
      <ul>
        <li>
          <a href="/account">Account</a>
        </li>
        <li>
          <button
            type="button"
            class="link"
            id="sign-out"
            onClick={async () => {
              disconnect();
              try {
                await signOut();
              } finally {
                navigate("/");
              }
            }}
          >
            Sign out
          </button>
        </li>
      </ul>
    </details>
  );
}

/** The ids of the tasks of the organization in use that wait for a person; null when not known. */
const waiting = signal<Set<string> | null>(null);

/** The organization the count is for, a load of it under way, and a change heard meanwhile. */
const tracking = { orgId: null as string | null, loading: false, changedMeanwhile: false };

/** A change heard while a read is under way: that read is done again (true), or none is (false). */
function heardDuringLoad(): boolean {
  if (tracking.loading) tracking.changedMeanwhile = true;
  return tracking.loading;
}

/**
 * Reads the waiting tasks of the organization in use. A change the socket brings while a read is
 * under way may or may not be in what it reads, so it is read again until none came meanwhile
 * (each read starts after the change was committed, so the last one has it).
 */
async function loadWaiting() {
  if (heardDuringLoad()) return;
  tracking.loading = true;
  try {
    do {
      tracking.changedMeanwhile = false;
      const id = tracking.orgId;
      if (!id) return;
      let found: Set<string> | null;
      try {
        const pages = await Promise.all(["needs_input", "needs_approval"].map((s) => api<Page<Task>>("GET", `/orgs/${encodeURIComponent(id)}/tasks?status=${s}&limit=200`)));
        found = new Set(pages.flatMap((p) => p.items.map((t) => t.id)));
      } catch {
        found = null;
      }
      // Another organization was chosen meanwhile: this read is not its count.
      if (id !== tracking.orgId) tracking.changedMeanwhile = true;
      else waiting.value = found;
    } while (tracking.changedMeanwhile);
  } finally {
    tracking.loading = false;
  }
}

/**
 * Keeps `waiting` current for the organization in use: the tasks in needs_input and
 * needs_approval, read after each (re)subscription, then changed by the socket's records.
 */
function useWaitingTracker(id: string | null) {
  tracking.orgId = id;
  useEffect(() => {
    waiting.value = null;
  }, [id]);
  useFollow(id, null, {
    subscribed: () => void loadWaiting(),
    task: (t) => {
      if (t.orgId !== id || heardDuringLoad() || !waiting.value) return;
      const had = waiting.value.has(t.id);
      if (had === WAITING.has(t.status)) return;
      const next = new Set(waiting.value);
      if (had) next.delete(t.id);
      else next.add(t.id);
      waiting.value = next;
    },
  });
}

/** How many tasks wait for a person (nothing when none do); `compact` is the phone's top bar. */
function WaitingCount({ compact }: { compact?: boolean }) {
  const n = waiting.value?.size ?? 0;
  if (n === 0) return null;
  const text = `${n} task${n === 1 ? "" : "s"} waiting for a person`;
  if (compact) {
    return (
      <a class="waiting" href="/tasks?view=board" title={text} aria-label={text}>
        {n}
      </a>
    );
  }
  return (
    <span class="waiting" id="waiting-count" title={text} aria-label={text}>
      {n}
    </span>
  );
}
