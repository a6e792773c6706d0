// Follows one task live: the WebSocket pushes task.updated / task.event, and HTTP reads
// (task, then events after the last seq shown) fill every gap: at the start, after each
// (re)subscribe, when a pushed seq skips ahead, and on a timer while the socket is down.
// Every step runs through one queue, so events are shown exactly once and in order.
import type { ApiClient } from "./http";
import { ApiFailure, Unreachable } from "./errors";
import type { Page, Task, TaskEvent } from "./types";

export interface FollowOptions {
  client: ApiClient;
  orgId: string;
  taskId: string;
  /** Show events with seq greater than this (0: the whole timeline). */
  afterSeq?: number;
  onEvent(event: TaskEvent): void;
  /** Follow until this says so; it sees the task only after every event up to its state was shown. */
  done(task: Task): boolean;
  /** Polling period while the socket is down, and a slower safety poll while it is up. */
  pollMs?: number;
  safetyPollMs?: number;
}

const MAX_BACKOFF_MS = 10_000;

export function followTask(opts: FollowOptions): Promise<Task> {
  const { client, orgId, taskId } = opts;
  const pollMs = opts.pollMs ?? 2_000;
  const safetyPollMs = opts.safetyPollMs ?? 15_000;
  const base = `/orgs/${encodeURIComponent(orgId)}/tasks/${encodeURIComponent(taskId)}`;
  let lastSeq = opts.afterSeq ?? 0;
  let finished = false;
  let subscribed = false;
  let socket: WebSocket | null = null;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  let queue: Promise<void> = Promise.resolve();

  return new Promise<Task>((resolve, reject) => {
    const stop = () => {
      finished = true;
      if (timer) clearTimeout(timer);
      if (reconnectTimer) clearTimeout(reconnectTimer);
      socket?.close();
    };
    const finish = (task: Task) => {
      if (finished) return;
      stop();
      resolve(task);
    };
    const fail = (err: unknown) => {
      if (finished) return;
      stop();
      reject(err);
    };
    // Steps run one after another; a refusal ends the follow, an outage or a server error does not.
    const enqueue = (step: () => Promise<void>) => {
      queue = queue.then(async () => {
        if (finished) return;
        try {
          await step();
        } catch (err) {
          const transient = err instanceof Unreachable || (err instanceof ApiFailure && (err.status >= 500 || err.status === 429));
          if (!transient) fail(err);
        }
      });
    };

    const show = (e: TaskEvent) => {
      if (e.seq <= lastSeq) return;
      lastSeq = e.seq;
      opts.onEvent(e);
    };

    const catchUp = async () => {
      const task = await client.request<Task>("GET", base);
      // Pages follow from lastSeq itself (show() advances it), so no cursor is needed.
      for (;;) {
        const page = await client.request<Page<TaskEvent>>("GET", `${base}/events`, { query: { after: lastSeq, limit: 200 } });
        for (const e of page.items) show(e);
        if (!page.nextCursor || page.items.length === 0 || finished) break;
      }
      if (opts.done(task)) finish(task);
    };

    const schedulePoll = () => {
      if (finished) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(
        () => {
          enqueue(catchUp);
          queue.then(schedulePoll);
        },
        subscribed ? safetyPollMs : pollMs,
      );
    };

    const onMessage = (raw: string) => {
      let msg: any;
      try {
        msg = JSON.parse(raw);
      } catch {
        return;
      }
      if (msg.type === "subscribed") {
        subscribed = true;
        failures = 0;
        enqueue(catchUp); // whatever happened while we were not subscribed
        schedulePoll();
      } else if (msg.type === "task.event" && msg.taskId === taskId && msg.event) {
        const e = msg.event as TaskEvent;
        enqueue(async () => {
          if (e.seq <= lastSeq) return;
          if (e.seq > lastSeq + 1) return catchUp();
          show(e);
          // A status event may be the only sign of a state change (task.updated is not sent for
          // every change), so read the task again.
          if (e.type === "status") await catchUp();
        });
      } else if (msg.type === "task.updated" && msg.task?.id === taskId) {
        // The events of this change follow on the socket; catchUp reads them before deciding.
        if (opts.done(msg.task as Task)) enqueue(catchUp);
      } else if (msg.type === "error") {
        const code = String(msg.code ?? "error");
        if (code === "forbidden" || code === "not_found") fail(new ApiFailure(code === "forbidden" ? 403 : 404, code, msg.message ?? "the server refused the subscription"));
      }
    };

    const reconnectLater = () => {
      const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** failures++);
      reconnectTimer = setTimeout(() => void connect(), delay);
    };

    const connect = async () => {
      if (finished) return;
      let token: string | null;
      try {
        token = await client.accessToken(); // may refresh the session first
      } catch (err) {
        return err instanceof Unreachable ? reconnectLater() : fail(err);
      }
      const ws = new WebSocket(client.wsUrl(), token ? { headers: { authorization: `Bearer ${token}` } } : undefined);
      socket = ws;
      ws.onopen = () => ws.send(JSON.stringify({ type: "subscribe", orgId, taskId }));
      ws.onmessage = (ev) => onMessage(typeof ev.data === "string" ? ev.data : Buffer.from(ev.data as ArrayBuffer).toString("utf8"));
      ws.onerror = () => {}; // a close follows; it schedules the reconnect
      ws.onclose = () => {
        if (socket !== ws) return;
        socket = null;
        subscribed = false;
        if (finished) return;
        schedulePoll(); // poll while the socket is down
        reconnectLater();
      };
    };

    enqueue(catchUp);
    schedulePoll();
    void connect();
  });
}
