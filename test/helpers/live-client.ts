// A client of the live-updates socket (/api/v1/ws) for tests: every message and the close are
// kept; waits are on messages, with a deadline only to fail.
import type { TestServer } from "./server";

export type Msg = Record<string, any>;

export class LiveClient {
  readonly messages: Msg[] = [];
  closeCode: number | null = null;
  readonly closed: Promise<number>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.onmessage = (e) => {
      this.messages.push(JSON.parse(String(e.data)));
      this.wake();
    };
    this.closed = new Promise((resolve) => {
      ws.onclose = (e) => {
        this.closeCode = e.code;
        this.wake();
        resolve(e.code);
      };
    });
  }

  /** A socket to the server, authenticated with the bearer token. */
  static async open(s: TestServer, token: string): Promise<LiveClient> {
    const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${token}` } } as unknown as string[]);
    const c = new LiveClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error("socket error"));
    });
    return c;
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The first message that matches, waiting up to `ms`. */
  async next(match: (m: Msg) => boolean, ms = 5000): Promise<Msg> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (this.closeCode !== null) throw new Error(`closed (${this.closeCode}); got ${JSON.stringify(this.messages).slice(0, 2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; got ${JSON.stringify(this.messages).slice(0, 2000)}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  /** Sends a message with an id and waits for the answer that echoes it. */
  ask(message: Msg): Promise<Msg> {
    const id = Math.random().toString(36).slice(2);
    this.ws.send(JSON.stringify({ ...message, id }));
    return this.next((m) => m.id === id);
  }

  async subscribe(orgId: string, taskId?: string) {
    const answer = await this.ask({ type: "subscribe", orgId, ...(taskId ? { taskId } : {}) });
    if (answer.type !== "subscribed") throw new Error(`subscribe -> ${JSON.stringify(answer)}`);
  }

  /** The close code, or a failure when the socket is still open after `ms`. */
  closedWithin(ms = 3000): Promise<number> {
    return Promise.race([this.closed, new Promise<number>((_, reject) => setTimeout(() => reject(new Error("the socket is still open")), ms))]);
  }

  /** The task.updated messages of a task, in arrival order. */
  updates(taskId: string): Msg[] {
    return this.messages.filter((m) => m.type === "task.updated" && m.task.id === taskId);
  }

  /** The task.event messages' events of a task, in arrival order. */
  events(taskId: string): Msg[] {
    return this.messages.filter((m) => m.type === "task.event" && m.taskId === taskId).map((m) => m.event);
  }

  close() {
    if (this.closeCode === null) this.ws.close();
  }
}
