// @ts-check
// "/tasks/:taskId": one task (SPEC §5, §11), the page the callbacks' `url` links to. The address
// has no organization, so the task is looked for in each of the person's organizations. Facts,
// actions, artifacts, the plan and the timeline, kept current over the live socket (SPEC §6).
// Everything from the server is inserted as text (textContent), never as HTML.
import { $, ApiError, api, busy, currentAccessToken, errorText, refresh, requireSignIn, showError, showOnly, when } from "./app.js";

/** @typedef {"queued" | "running" | "paused" | "needs_input" | "needs_approval" | "completed" | "failed" | "cancelled"} Status */
/** @typedef {"pause" | "resume" | "cancel" | "retry" | "restart" | "input" | "approve" | "deny"} Action */
/** @typedef {{ name: string, contentType: string, size: number, createdAt: string }} Artifact */
/**
 * @typedef {{ id: string, orgId: string, projectId: string, title: string, prompt: string, priority: string, kind: string,
 *   review: { base: string, head: string } | null, status: Status, attempt: number, workerId: string | null, parentId: string | null,
 *   createdBy: { type: string, id: string }, summary: string | null, needs: { kind: string, message: string } | null,
 *   plan: { tasks: unknown[] } | null, artifacts: Artifact[], createdAt: string, updatedAt: string,
 *   startedAt: string | null, finishedAt: string | null }} Task
 */
/** @typedef {{ seq: number, type: string, at: string, actor?: { type: string, id: string }, data: unknown }} TaskEvent */

/** The actions in the server's order. */
export const ACTIONS = /** @type {const} */ (["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"]);

const NON_TERMINAL = /** @type {Status[]} */ (["queued", "running", "paused", "needs_input", "needs_approval"]);

/**
 * Where each action is allowed from: a copy of ACTION_TABLE in src/modules/tasks/machine.ts (the
 * browser cannot import server code; test/web/task.test.ts checks that the two are equal).
 * @type {Record<Action, readonly Status[]>}
 */
export const ACTION_FROM = {
  pause: ["queued", "running", "needs_input", "needs_approval"],
  resume: ["paused"],
  cancel: NON_TERMINAL,
  retry: ["failed", "cancelled"],
  restart: ["running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"],
  input: ["needs_input", "running"],
  approve: ["needs_approval"],
  deny: ["needs_approval"],
};

/** @param {Status} status */
export function allowedActions(status) {
  return ACTIONS.filter((a) => ACTION_FROM[a].includes(status));
}

/** @type {Record<Action, string>} */
const LABELS = { pause: "Pause", resume: "Resume", cancel: "Cancel", retry: "Retry", restart: "Restart", input: "Send input", approve: "Approve", deny: "Deny" };
/** @type {Partial<Record<Action, string>>} */
const BUTTON_CLASS = { approve: "primary", input: "primary", resume: "primary", retry: "primary", cancel: "danger", deny: "danger" };

/** @param {string} text @param {number} max */
const truncate = (text, max) => {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
};

/**
 * What an event says, in one line (the browser's version of the command line's eventText in
 * src/cli/client/format.ts); unknown shapes fall back to their JSON.
 * @param {TaskEvent} e
 */
export function eventText(e) {
  const d = /** @type {Record<string, unknown>} */ (e.data && typeof e.data === "object" ? e.data : {});
  /** @param {unknown} v */
  const s = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v));
  const by = e.actor ? ` by ${e.actor.type} ${e.actor.id}` : "";
  switch (e.type) {
    case "status":
      return `${d.from ? `${s(d.from)} → ` : ""}${s(d.to)}${by}${d.reason || d.message ? `: ${s(d.reason ?? d.message)}` : ""}`;
    case "action":
      return `${s(d.action)}${by}${d.reason ? `: ${s(d.reason)}` : ""}${d.input ? ` (input: ${truncate(s(d.input), 80)})` : ""}`;
    case "log":
      // stdout is the ordinary case; other streams (stderr, reasoning, agent) are named.
      return `${d.stream && d.stream !== "stdout" ? `[${s(d.stream)}] ` : ""}${s(d.line ?? d.text ?? e.data)}`;
    case "tool": {
      const parts = [s(d.name ?? "tool"), s(d.status)];
      if (d.input !== undefined && d.input !== null) parts.push(truncate(s(d.input), 120));
      if (d.output !== undefined && d.output !== null) parts.push(`→ ${truncate(s(d.output), 120)}`);
      return parts.filter(Boolean).join(" ");
    }
    case "artifact":
      return `${s(d.name)}${typeof d.size === "number" ? ` (${sizeText(d.size)})` : ""}`;
    default: {
      if (typeof e.data === "string") return e.data;
      const text = d.text ?? d.line ?? d.message ?? d.summary;
      if (typeof text === "string") return text;
      return e.data === null || e.data === undefined ? "" : JSON.stringify(e.data);
    }
  }
}

/** @param {number} n bytes */
function sizeText(n) {
  if (n < 1024) return `${n} byte${n === 1 ? "" : "s"}`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** @param {string} iso local "HH:MM:SS" */
function clock(iso) {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

/**
 * @param {string} tag
 * @param {string | null} [className]
 * @param {string} [text]
 */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Image types a browser shows in an <img> (SVG left out: it is a document, offered as a download). */
const PREVIEW_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);
const MAX_PREVIEW_BYTES = 10 * 1024 * 1024;

async function main() {
  const user = await requireSignIn("Sign in to see the task.");
  const taskId = taskIdOfAddress();
  let found = null;
  try {
    found = taskId ? await findTask(taskId) : null;
  } catch (err) {
    showError("missing-error", err);
  }
  if (!found) {
    showOnly("missing");
    return;
  }
  new TaskPage(found.org, found.task, user.id).start();
}

/** The task id of the address, or null when it cannot be one. */
function taskIdOfAddress() {
  try {
    const id = decodeURIComponent(location.pathname.replace(/^\/tasks\//, "").replace(/\/$/, ""));
    return /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}

/** @typedef {{ id: string, name: string, role: string }} Org */

/**
 * The task in whichever of the person's organizations holds it (the API answers 404 for every
 * other one, as it does for another organization's task).
 * @param {string} taskId
 * @returns {Promise<{ org: Org, task: Task } | null>}
 */
async function findTask(taskId) {
  /** @type {Org[]} */
  const orgs = [];
  let cursor = null;
  do {
    const page = await api("GET", `/orgs?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    orgs.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && orgs.length < 2000);
  /** @type {unknown} */
  let failure = null;
  // A few organizations at a time: most people have one or two.
  for (let i = 0; i < orgs.length; i += 6) {
    const batch = orgs.slice(i, i + 6);
    const results = await Promise.allSettled(batch.map((o) => api("GET", `/orgs/${encodeURIComponent(o.id)}/tasks/${encodeURIComponent(taskId)}`)));
    for (const [j, r] of results.entries()) {
      if (r.status === "fulfilled") return { org: batch[j], task: r.value };
      if (!(r.reason instanceof ApiError && r.reason.status === 404)) failure ??= r.reason;
    }
  }
  if (failure) throw failure;
  return null;
}

class TaskPage {
  /**
   * @param {Org} org
   * @param {Task} task
   * @param {string} userId
   */
  constructor(org, task, userId) {
    this.org = org;
    this.task = task;
    this.userId = userId;
    this.path = `/orgs/${encodeURIComponent(org.id)}/tasks/${encodeURIComponent(task.id)}`;
    /** @type {string | null} */
    this.projectName = null;
    this.lastSeq = 0;
    /** Timeline work (fetches and live events) runs one piece at a time, so lines stay in order. */
    this.timeline = Promise.resolve();
    this.acting = false;
    this.actionsKey = "";
    this.artifactsKey = "";
    /** Previews already loaded, by name and creation time. @type {Map<string, string>} */
    this.previews = new Map();
    /** @type {Task[] | null} */
    this.children = null;
  }

  start() {
    $("task-org").textContent = this.org.name;
    $("task-id").textContent = this.task.id;
    this.render();
    showOnly("task");
    const form = /** @type {HTMLFormElement} */ ($("actions-form"));
    form.addEventListener("submit", (event) => event.preventDefault());
    $("plan-apply").addEventListener("click", () => void this.applyPlan());
    void this.loadProject();
    void this.loadChildren();
    this.serial(() => this.fetchEvents());
    this.connect();
  }

  /** A newer record of the task (from an answer, a fetch or the socket); older ones are ignored. */
  /** @param {Task} task */
  apply(task) {
    if (task.id !== this.task.id || task.updatedAt < this.task.updatedAt) return;
    this.task = task;
    this.render();
  }

  render() {
    const t = this.task;
    $("task-title").textContent = t.title;
    document.title = `${t.title} · ao`;
    const status = $("task-status");
    status.textContent = `${t.status}${t.attempt ? ` (attempt ${t.attempt})` : ""}`;
    status.dataset.status = t.status;
    const waiting = t.status === "needs_input" || t.status === "needs_approval";
    const needs = $("task-needs");
    needs.hidden = !t.needs;
    needs.classList.toggle("attention", waiting);
    if (t.needs) {
      const what = t.needs.kind === "approval" ? "approval" : "input";
      $("task-needs-kind").textContent = waiting ? `Waiting for your ${what}:` : `Asked for ${what}:`;
      $("task-needs-message").textContent = t.needs.message;
    }
    this.renderFacts();
    $("task-summary-group").hidden = !t.summary;
    $("task-summary").textContent = t.summary ?? "";
    $("task-prompt").textContent = t.prompt;
    this.renderActions();
    this.renderArtifacts();
    this.renderPlan();
  }

  renderFacts() {
    const t = this.task;
    /** @type {[string, string | Node][]} */
    const rows = [
      ["Kind", t.kind],
      ["Priority", t.priority],
      ["Project", this.projectName ?? t.projectId],
    ];
    if (t.review) rows.push(["Review", `${t.review.base} → ${t.review.head}`]);
    rows.push(["Worker", t.workerId ?? "—"]);
    if (t.parentId) rows.push(["Proposed by", taskLink(t.parentId, "the plan")]);
    const by = t.createdBy.type === "user" && t.createdBy.id === this.userId ? "you" : `${t.createdBy.type} ${t.createdBy.id}`;
    rows.push(["Created", `${when(t.createdAt)} by ${by}`]);
    rows.push(["Started", t.startedAt ? when(t.startedAt) : "—"]);
    rows.push(["Finished", t.finishedAt ? when(t.finishedAt) : "—"]);
    rows.push(["Updated", when(t.updatedAt)]);
    $("task-facts").replaceChildren(
      ...rows.flatMap(([k, v]) => {
        const dd = el("dd");
        dd.append(v);
        return [el("dt", null, k), dd];
      }),
    );
  }

  async loadProject() {
    try {
      const project = await api("GET", `/orgs/${encodeURIComponent(this.org.id)}/projects/${encodeURIComponent(this.task.projectId)}`);
      this.projectName = project.name;
      this.renderFacts();
    } catch {
      // The id stays shown: a project this page cannot read is no reason to fail the page.
    }
  }

  renderActions() {
    const allowed = allowedActions(this.task.status);
    const key = allowed.join(",");
    if (key === this.actionsKey) return;
    this.actionsKey = key;
    const buttons = allowed.map((action) => {
      const b = /** @type {HTMLButtonElement} */ (el("button", BUTTON_CLASS[action] ?? null, LABELS[action]));
      b.type = "button";
      b.dataset.action = action;
      b.disabled = this.acting;
      b.addEventListener("click", () => void this.act(action));
      return b;
    });
    $("action-buttons").replaceChildren(...buttons);
    $("action-none").hidden = allowed.length > 0;
    $("action-input-group").hidden = !allowed.includes("input");
  }

  /** @param {Action} action */
  async act(action) {
    const reason = /** @type {HTMLTextAreaElement} */ ($("action-reason"));
    const input = /** @type {HTMLTextAreaElement} */ ($("action-input"));
    showError("action-error", null);
    $("action-done").hidden = true;
    if (action === "input" && !input.value.trim()) {
      showError("action-error", new Error("Write the answer to hand to the agent first."));
      input.focus();
      return;
    }
    const body = { action, ...(reason.value.trim() ? { reason: reason.value } : {}), ...(action === "input" ? { input: input.value } : {}) };
    this.acting = true;
    try {
      await busy($("actions-form"), async () => {
        try {
          const task = await api("POST", `${this.path}/actions`, body);
          reason.value = "";
          if (action === "input") input.value = "";
          $("action-done").textContent = `${LABELS[action]}: done. The task is now ${task.status}.`;
          $("action-done").hidden = false;
          this.apply(task);
        } catch (err) {
          if (err instanceof ApiError && err.code === "invalid_transition") {
            showError("action-error", new Error(`${errorText(err)} The task changed meanwhile; the buttons now show what it allows.`));
            await this.reload();
          } else showError("action-error", err);
        }
      });
    } finally {
      this.acting = false;
      this.actionsKey = "";
      this.renderActions();
    }
  }

  async reload() {
    try {
      this.apply(await api("GET", this.path));
    } catch (err) {
      showError("action-error", err);
    }
  }

  renderArtifacts() {
    const list = this.task.artifacts ?? [];
    const key = JSON.stringify(list);
    if (key === this.artifactsKey) return;
    this.artifactsKey = key;
    $("artifacts-card").hidden = list.length === 0;
    $("artifacts").replaceChildren(...list.map((a) => this.artifactItem(a)));
  }

  /** @param {Artifact} a */
  artifactItem(a) {
    const li = el("li");
    const link = /** @type {HTMLAnchorElement} */ (el("a", null, a.name));
    // The route wants the bearer token, which a plain link cannot send: the click fetches the
    // file and hands it to the browser as a download.
    link.href = `/api/v1${this.path}/artifacts/${encodeURIComponent(a.name)}`;
    link.download = a.name;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      void this.download(a.name);
    });
    li.append(link, " ", el("span", "muted", `${a.contentType}, ${sizeText(a.size)}`));
    if (PREVIEW_TYPES.has(a.contentType.split(";")[0].trim().toLowerCase()) && a.size <= MAX_PREVIEW_BYTES) {
      const img = /** @type {HTMLImageElement} */ (el("img", "preview"));
      img.alt = `Preview of ${a.name}`;
      img.hidden = true;
      li.append(img);
      void this.preview(img, a);
    }
    return li;
  }

  /**
   * Shows an image artifact as a data: URL (the page's policy allows img-src 'self' data:).
   * @param {HTMLImageElement} img
   * @param {Artifact} a
   */
  async preview(img, a) {
    const key = `${a.name}\n${a.createdAt}`;
    try {
      let url = this.previews.get(key);
      if (!url) {
        url = await dataUrl(await this.artifactBlob(a.name));
        this.previews.set(key, url);
      }
      img.src = url;
      img.hidden = false;
    } catch (err) {
      showError("artifacts-error", err);
    }
  }

  /** @param {string} name */
  async download(name) {
    showError("artifacts-error", null);
    try {
      const url = URL.createObjectURL(await this.artifactBlob(name));
      const a = /** @type {HTMLAnchorElement} */ (el("a"));
      a.href = url;
      a.download = name;
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      showError("artifacts-error", err);
    }
  }

  /** @param {string} name */
  async artifactBlob(name) {
    const get = () =>
      fetch(`/api/v1${this.path}/artifacts/${encodeURIComponent(name)}`, {
        credentials: "same-origin",
        headers: { authorization: `Bearer ${currentAccessToken() ?? ""}` },
      });
    let res = await get();
    if (res.status === 401 && (await refresh())) res = await get();
    if (!res.ok) {
      /** @type {any} */
      let body = null;
      try {
        body = await res.json();
      } catch {}
      throw new ApiError(res.status, body?.error?.code ?? `http_${res.status}`, body?.error?.message ?? `the server answered ${res.status} for ${name}`);
    }
    return res.blob();
  }

  renderPlan() {
    const t = this.task;
    const proposed = t.kind === "plan" && t.plan && Array.isArray(t.plan.tasks) ? t.plan.tasks : null;
    /** @type {Task[]} */
    const children = this.children ?? [];
    $("plan-card").hidden = !proposed && children.length === 0;
    $("plan-tasks").replaceChildren(
      ...(proposed ?? []).map((p) => {
        const item = /** @type {Record<string, unknown>} */ (p && typeof p === "object" ? p : {});
        const li = el("li");
        li.append(el("strong", null, typeof item.title === "string" ? item.title : "(untitled)"));
        for (const extra of [item.priority, item.kind]) if (typeof extra === "string") li.append(" ", el("span", "badge", extra));
        if (typeof item.prompt === "string") li.append(el("p", "muted pre", truncate(item.prompt, 300)));
        return li;
      }),
    );
    $("plan-actions").hidden = !(proposed && t.status === "completed" && children.length === 0);
    $("plan-children-group").hidden = children.length === 0;
    $("plan-children").replaceChildren(
      ...children.map((c) => {
        const li = el("li");
        li.append(taskLink(c.id, c.title), " ", el("span", "badge", c.status));
        return li;
      }),
    );
  }

  /** The tasks an applied plan made (none for other kinds). */
  async loadChildren() {
    if (this.task.kind !== "plan") return;
    try {
      const page = await api("GET", `/orgs/${encodeURIComponent(this.org.id)}/tasks?parentId=${encodeURIComponent(this.task.id)}&limit=200`);
      // Newest first from the API; the plan's own order is the order they were made in.
      this.children = [...page.items].reverse();
      this.renderPlan();
    } catch (err) {
      showError("plan-error", err);
    }
  }

  async applyPlan() {
    showError("plan-error", null);
    await busy($("plan-card"), async () => {
      try {
        const answer = await api("POST", `${this.path}/apply-plan`);
        this.children = answer.tasks;
        this.renderPlan();
      } catch (err) {
        showError("plan-error", err);
      }
    });
  }

  /** @param {() => Promise<void> | void} work */
  serial(work) {
    this.timeline = this.timeline
      .then(work)
      .then(() => showError("timeline-error", null))
      .catch((err) => showError("timeline-error", err));
  }

  /** Every event after the last one shown, page by page. */
  async fetchEvents() {
    for (;;) {
      const page = await api("GET", `${this.path}/events?after=${this.lastSeq}&limit=200`);
      for (const e of page.items) this.append(e);
      if (!page.nextCursor || page.items.length === 0) return;
    }
  }

  /** @param {TaskEvent} e */
  onEvent(e) {
    this.serial(async () => {
      if (e.seq <= this.lastSeq) return;
      if (e.seq === this.lastSeq + 1) this.append(e);
      // A gap: some were missed (a slow socket, say): fetch them in order.
      else await this.fetchEvents();
    });
  }

  /** @param {TaskEvent} e */
  append(e) {
    if (e.seq <= this.lastSeq) return;
    this.lastSeq = e.seq;
    const li = el("li");
    li.dataset.seq = String(e.seq);
    li.dataset.type = e.type;
    const time = /** @type {HTMLTimeElement} */ (el("time", null, clock(e.at)));
    time.dateTime = e.at;
    time.title = when(e.at);
    li.append(el("span", "seq", `#${e.seq}`), " ", time, " ", el("span", "type", e.type), " ", el("span", "text", eventText(e)));
    $("timeline").append(li);
    $("timeline-empty").hidden = true;
  }

  /**
   * The live socket: authenticate with the first message, subscribe to this task, apply what
   * arrives; when it drops, reconnect with a growing pause, renewing the sign-in first when the
   * server closed it for an expired token (4401), then fetch whatever was missed meanwhile.
   */
  connect() {
    let delay = 500;
    const liveState = $("live-state");
    const ended = () => {
      liveState.textContent = "live updates stopped: your sign-in has ended; reload the page to sign in again";
    };
    /** @param {boolean} renew the server closed the socket for the token (4401) */
    const later = (renew) => {
      liveState.textContent = "reconnecting…";
      const wait = delay * (0.75 + Math.random() / 2);
      delay = Math.min(delay * 2, 30_000);
      setTimeout(async () => {
        if (renew) {
          try {
            if (!(await refresh())) return ended();
          } catch {
            // The server is unreachable: the socket fails too and comes back here.
          }
        }
        open();
      }, wait);
    };
    const open = () => {
      if (!currentAccessToken()) return later(true);
      const ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/api/v1/ws`);
      let stopped = false;
      ws.addEventListener("open", () => ws.send(JSON.stringify({ type: "auth", token: currentAccessToken() ?? "" })));
      ws.addEventListener("message", (event) => {
        /** @type {any} */
        let msg;
        try {
          msg = JSON.parse(String(event.data));
        } catch {
          return;
        }
        if (msg.type === "authenticated") ws.send(JSON.stringify({ type: "subscribe", orgId: this.org.id, taskId: this.task.id }));
        else if (msg.type === "subscribed") {
          delay = 500;
          liveState.textContent = "live";
          // Whatever changed before the subscription took hold (or while disconnected).
          this.serial(async () => {
            await this.fetchEvents();
            this.apply(await api("GET", this.path));
          });
        } else if (msg.type === "task.updated" && msg.task) this.apply(msg.task);
        else if (msg.type === "task.event" && msg.taskId === this.task.id && msg.event) this.onEvent(msg.event);
        else if (msg.type === "error" && (msg.code === "forbidden" || msg.code === "not_found")) {
          // No longer allowed to follow this task: stop rather than retry forever.
          stopped = true;
          liveState.textContent = `live updates stopped: ${errorText(new ApiError(403, msg.code, msg.message))}`;
          ws.close();
        }
      });
      ws.addEventListener("close", (event) => {
        if (!stopped) later(event.code === 4401);
      });
    };
    open();
  }
}

/**
 * @param {string} id
 * @param {string} text
 */
function taskLink(id, text) {
  const a = /** @type {HTMLAnchorElement} */ (el("a", null, text));
  a.href = `/tasks/${encodeURIComponent(id)}`;
  return a;
}

/**
 * @param {Blob} blob
 * @returns {Promise<string>}
 */
function dataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(blob);
  });
}

// Last: the page runs once everything above is defined (a bun test imports the tables only).
if (typeof document !== "undefined") await main();
