// The live socket (SPEC §6), one per tab, shared by every part of the page that follows an
// organization or a task: authenticate with the first message, subscribe to what is followed,
// hand on what arrives. When it drops, it reconnects with a growing pause (renewing the sign-in
// first when the server closed it for the token, 4401) and subscribes again; each follower's
// `subscribed` runs again then: the moment to catch up on what was missed (the first page
// again, or the events after the last seq).
import { signal, type Signal } from "@preact/signals";
import { ApiError, currentAccessToken, errorText, refresh } from "./api";
import type { Task, TaskEvent } from "./types";
import type { WorkerRecord } from "./records";

export interface Follower {
  /** Each time the subscription takes hold (first time and after every reconnect). */
  subscribed?: () => void;
  /** A newer record of a task (of the organization, or the one task followed). */
  task?: (task: Task) => void;
  /** A new event of a task (of the organization, or the one task followed). */
  event?: (taskId: string, event: TaskEvent) => void;
  /**
   * A newer record of one of the organization's workers (one connected, went or was changed;
   * organizations only). Why its queued tasks wait may have changed with it.
   */
  worker?: (worker: WorkerRecord) => void;
}

/**
 * What a follower heard while its reads were under way. A read's answer may predate a record
 * heard meanwhile (the server answered before the change; the socket, or an answer of ours,
 * brought it first), so each read hands back what was heard during it, to apply again over it.
 */
export class HeardMeanwhile<T> {
  private reads = new Set<T[]>();

  /** `read`'s answer, and what was heard while it was under way, in the order heard. */
  async read<R>(read: () => Promise<R>): Promise<{ answer: R; heard: T[] }> {
    const heard: T[] = [];
    this.reads.add(heard);
    try {
      return { answer: await read(), heard };
    } finally {
      this.reads.delete(heard);
    }
  }

  /** A newer record (or change): every read under way keeps it. */
  hear(record: T) {
    for (const heard of this.reads) heard.push(record);
  }
}

/** What a follower shows as "live", "connecting…", "reconnecting…" or why updates stopped. */
export type LiveState = string;

interface Subscription {
  orgId: string;
  taskId: string | null;
  followers: Set<Follower>;
  state: Signal<LiveState>;
  stopped: boolean;
}

const subs = new Map<string, Subscription>();
let ws: WebSocket | null = null;
let authed = false;
let delay = 500;
let timer: ReturnType<typeof setTimeout> | null = null;
const keyOf = (orgId: string, taskId: string | null) => (taskId ? `${orgId}/${taskId}` : orgId);

/**
 * Follows an organization (taskId null: all its tasks) or one task; answers the subscription's
 * state (a signal) and how to stop following.
 */
export function follow(orgId: string, taskId: string | null, follower: Follower): { state: Signal<LiveState>; stop: () => void } {
  const key = keyOf(orgId, taskId);
  let sub = subs.get(key);
  if (!sub) {
    sub = { orgId, taskId, followers: new Set(), state: signal("connecting…"), stopped: false };
    subs.set(key, sub);
    if (ws && authed) subscribe(sub);
  } else if (sub.state.value === "live") {
    // Already live: this follower catches up now, as it would after a subscription.
    queueMicrotask(() => follower.subscribed?.());
  }
  sub.followers.add(follower);
  connect();
  const s = sub;
  return {
    state: s.state,
    stop: () => {
      s.followers.delete(follower);
      if (s.followers.size > 0 || subs.get(key) !== s) return;
      subs.delete(key);
      if (ws && authed && ws.readyState === WebSocket.OPEN && !s.stopped) ws.send(JSON.stringify({ type: "unsubscribe", orgId, ...(taskId ? { taskId } : {}) }));
    },
  };
}

function subscribe(sub: Subscription) {
  if (sub.stopped) return;
  ws?.send(JSON.stringify({ type: "subscribe", id: keyOf(sub.orgId, sub.taskId), orgId: sub.orgId, ...(sub.taskId ? { taskId: sub.taskId } : {}) }));
}

function setAll(state: LiveState) {
  for (const sub of subs.values()) if (!sub.stopped) sub.state.value = state;
}

function connect() {
  if (ws || timer || subs.size === 0) return;
  if (!currentAccessToken()) return later(true);
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/api/v1/ws`);
  ws = socket;
  authed = false;
  socket.addEventListener("open", () => socket.send(JSON.stringify({ type: "auth", token: currentAccessToken() ?? "" })));
  socket.addEventListener("message", (e) => {
    let msg: any;
    try {
      msg = JSON.parse(String(e.data));
    } catch {
      return;
    }
    if (msg.type === "authenticated") {
      authed = true;
      for (const sub of subs.values()) subscribe(sub);
    } else if (msg.type === "subscribed") {
      const sub = subs.get(keyOf(msg.orgId, msg.taskId ?? null));
      if (!sub) return;
      delay = 500;
      sub.state.value = "live";
      for (const f of [...sub.followers]) f.subscribed?.();
    } else if (msg.type === "task.updated" && msg.task) {
      for (const sub of subs.values()) {
        if (sub.orgId === msg.orgId && (!sub.taskId || sub.taskId === msg.task.id)) for (const f of [...sub.followers]) f.task?.(msg.task);
      }
    } else if (msg.type === "task.event" && msg.event) {
      for (const sub of subs.values()) {
        if (sub.orgId === msg.orgId && (!sub.taskId || sub.taskId === msg.taskId)) for (const f of [...sub.followers]) f.event?.(msg.taskId, msg.event);
      }
    } else if (msg.type === "worker.updated" && msg.worker) {
      for (const sub of subs.values()) if (sub.orgId === msg.orgId && !sub.taskId) for (const f of [...sub.followers]) f.worker?.(msg.worker);
    } else if (msg.type === "error" && (msg.code === "forbidden" || msg.code === "not_found")) {
      // No longer allowed to follow it: stop rather than retry forever. A refusal of one subscribe
      // names it (id); a lost membership names only the organization, and ends all of its
      // subscriptions (the organization's and each of its tasks').
      const ended = typeof msg.id === "string" ? [subs.get(msg.id)] : [...subs.values()].filter((s) => s.orgId === msg.orgId);
      for (const sub of ended) {
        if (!sub) continue;
        sub.stopped = true;
        sub.state.value = `live updates stopped: ${errorText(new ApiError(403, msg.code, msg.message))}`;
      }
    }
  });
  socket.addEventListener("close", (e) => {
    if (ws !== socket) return;
    ws = null;
    authed = false;
    if (subs.size > 0) later(e.code === 4401);
  });
}

function later(renew: boolean) {
  setAll("reconnecting…");
  const wait = delay * (0.75 + Math.random() / 2);
  delay = Math.min(delay * 2, 30_000);
  timer = setTimeout(async () => {
    // Nobody follows anything any more (signed out meanwhile): no renewal, no socket.
    if (subs.size === 0) return void (timer = null);
    if (renew) {
      try {
        if (!(await refresh())) {
          timer = null;
          return setAll("live updates stopped: your sign-in has ended; reload the page to sign in again");
        }
      } catch {
        // The server is unreachable: the socket fails too and comes back here.
      }
    }
    timer = null;
    connect();
  }, wait);
}

/** Closes the socket (signing out): followers stay, and reconnect when someone signs in again. */
export function disconnect() {
  ws?.close();
}
