// The attempt's timeline on its way to the server: numbered per attempt (the server dedupes by
// that seq, so a resend after a lost answer is harmless), batched, sent in order.
import type { WorkerEvent, WorkerEventType } from "../protocol/requests";
import { HttpError, type WorkerClient } from "./client";

const BATCH = 500;
const DELAY_MS = 50;

export class EventSink {
  private seq = 0;
  private pending: WorkerEvent[] = [];
  private sending: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stale = false;

  constructor(
    private readonly client: WorkerClient,
    private readonly taskId: string,
    private readonly leaseToken: string,
    /** The server refused the lease: this attempt is no longer ours. */
    private readonly onStale: () => void,
  ) {}

  push(type: WorkerEventType, data: unknown) {
    if (this.stale) return;
    this.pending.push({ seq: ++this.seq, type, data });
    if (this.pending.length >= BATCH) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), DELAY_MS);
  }

  /** Sends everything pushed so far; resolves when the server has it (or it can never have it). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.sending) await this.sending;
    if (this.pending.length === 0 || this.stale) return;
    const batch = this.pending.splice(0, BATCH);
    this.sending = (async () => {
      try {
        await this.client.events(this.taskId, { leaseToken: this.leaseToken, events: batch });
      } catch (err) {
        if (err instanceof HttpError && (err.status === 409 || err.status === 404 || err.status === 401)) {
          this.stale = true;
          this.pending = [];
          this.onStale();
        } else if (err instanceof HttpError && err.status === 400) {
          // A batch the server will never take (e.g. an oversized event): dropped, not retried forever.
        } else {
          this.pending.unshift(...batch);
        }
      } finally {
        this.sending = null;
      }
    })();
    await this.sending;
    if (this.pending.length > 0 && !this.stale) await this.flush();
  }
}
