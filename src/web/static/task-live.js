// @ts-check
// The live socket (SPEC §6) of the task page and the tasks list: authenticate with the first
// message, subscribe to one task (or, with no task id, the whole organization), hand on what arrives; when it drops, reconnect with a growing pause, renewing the sign-in
// first when the server closed it for an expired token (4401).
import { ApiError, currentAccessToken, errorText, refresh } from "./app.js";

/** @typedef {import("./task-model.js").Task} Task */
/** @typedef {import("./task-model.js").TaskEvent} TaskEvent */

/**
 * What the page does with the socket's news: `state` shows whether updates are live; `subscribed`
 * runs each time the subscription takes hold (the moment to catch up on what was missed before it,
 * or while disconnected); `task` and `event` are a newer record of the task and a new event.
 * @typedef {{
 *   state: (text: string) => void,
 *   subscribed: () => void,
 *   task: (task: Task) => void,
 *   event?: (event: TaskEvent) => void,
 * }} LiveHandlers
 */

export class LiveTask {
  /**
   * @param {string} orgId
   * @param {string | null} taskId null: every task of the organization
   * @param {LiveHandlers} on
   */
  constructor(orgId, taskId, on) {
    this.orgId = orgId;
    this.taskId = taskId;
    this.on = on;
    this.delay = 500;
    /** @type {WebSocket | null} */
    this.ws = null;
    this.ended = false;
  }

  start() {
    this.open();
  }

  /** Stops following for good (the list switched to another organization): no reconnect. */
  stop() {
    this.ended = true;
    this.ws?.close();
  }

  open() {
    if (this.ended) return;
    if (!currentAccessToken()) return this.later(true);
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/api/v1/ws`);
    this.ws = ws;
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
      if (msg.type === "authenticated") ws.send(JSON.stringify({ type: "subscribe", orgId: this.orgId, ...(this.taskId ? { taskId: this.taskId } : {}) }));
      else if (msg.type === "subscribed") {
        this.delay = 500;
        this.on.state("live");
        this.on.subscribed();
      } else if (msg.type === "task.updated" && msg.task) this.on.task(msg.task);
      else if (msg.type === "task.event" && this.taskId && msg.taskId === this.taskId && msg.event) this.on.event?.(msg.event);
      else if (msg.type === "error" && (msg.code === "forbidden" || msg.code === "not_found")) {
        // No longer allowed to follow this task: stop rather than retry forever.
        stopped = true;
        this.on.state(`live updates stopped: ${errorText(new ApiError(403, msg.code, msg.message))}`);
        ws.close();
      }
    });
    ws.addEventListener("close", (event) => {
      if (!stopped && !this.ended) this.later(event.code === 4401);
    });
  }

  /** @param {boolean} renew the server closed the socket for the token (4401) */
  later(renew) {
    this.on.state("reconnecting…");
    const wait = this.delay * (0.75 + Math.random() / 2);
    this.delay = Math.min(this.delay * 2, 30_000);
    setTimeout(async () => {
      if (this.ended) return;
      if (renew) {
        try {
          if (!(await refresh())) return this.on.state("live updates stopped: your sign-in has ended; reload the page to sign in again");
        } catch {
          // The server is unreachable: the socket fails too and comes back here.
        }
      }
      this.open();
    }, wait);
  }
}
