// The attempt's timeline on its way to the server: numbered per attempt (the server dedupes by
// that seq, so a resend after a lost answer is harmless), batched, sent in order. The task's own
// seq is given by the server as writes arrive, so the attempt flushes this sink before any other
// write of its own (artifact upload, transition): its timeline keeps the agent's order. Events are cut
// to a size the server takes and batches kept under its body limit, so one huge line cannot
// block the timeline.
import type { WorkerEvent, WorkerEventType } from "../protocol/requests";
import { backoff, HttpError, sleep, type WorkerClient } from "./client";

const BATCH = 500;
const DELAY_MS = 50;
/** Largest event sent, serialised (the server takes 256 KiB of data per event). */
export const MAX_EVENT_CHARS = 64 * 1024;
/** Largest batch, serialised (the server takes JSON bodies up to 1 MiB). */
export const MAX_BATCH_CHARS = 512 * 1024;
/** Fields that hold the bulk of an event (a log line, a message, a tool's output): cut, keeping the event's shape. */
const BULK_FIELDS = ["line", "text", "output", "message"];

/** The event's data, cut to MAX_EVENT_CHARS when larger; cut events say `truncated: true`. */
export function fitEvent(data: unknown): unknown {
  const json = JSON.stringify(data ?? null);
  if (json.length <= MAX_EVENT_CHARS) return data ?? null;
  if (data && typeof data === "object" && !Array.isArray(data)) {
    const d = data as Record<string, unknown>;
    for (const key of BULK_FIELDS) {
      const text = d[key];
      if (typeof text !== "string") continue;
      const room = MAX_EVENT_CHARS - (json.length - JSON.stringify(text).length) - 200;
      if (room < 1000) break;
      // JSON escapes can make a text longer than its characters: shrink until it fits.
      for (let keep = room; keep >= 1000; keep = Math.floor(keep / 2)) {
        const cut = { ...d, [key]: `${text.slice(0, keep)}… (${text.length - keep} more characters)`, truncated: true };
        if (JSON.stringify(cut).length <= MAX_EVENT_CHARS) return cut;
      }
    }
  }
  return { truncated: true, size: json.length, preview: json.slice(0, 8 * 1024) };
}

interface Pending {
  event: WorkerEvent;
  size: number;
}

export class EventSink {
  private seq = 0;
  private pending: Pending[] = [];
  private sending: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stale = false;
  private failures = 0;
  private maxBatchChars = MAX_BATCH_CHARS;

  constructor(
    private readonly client: Pick<WorkerClient, "events">,
    private readonly taskId: string,
    private readonly leaseToken: string,
    /** The server refused the lease: this attempt is no longer ours. */
    private readonly onStale: () => void,
    private readonly log: (line: string) => void = () => {},
  ) {}

  push(type: WorkerEventType, data: unknown) {
    if (this.stale) return;
    const fitted = fitEvent(data);
    this.pending.push({ event: { seq: ++this.seq, type, data: fitted }, size: JSON.stringify(fitted).length + 40 });
    if (this.pending.length >= BATCH) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), DELAY_MS);
  }

  /** Sends everything pushed so far; resolves when the server has it (or it can never have it). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    for (;;) {
      while (this.sending) await this.sending;
      if (this.pending.length === 0 || this.stale) return;
      this.sending = this.sendBatch().finally(() => (this.sending = null));
      await this.sending;
    }
  }

  /** Sends the oldest events that fit in one batch. */
  private async sendBatch() {
    let n = 0;
    let chars = 0;
    while (n < this.pending.length && n < BATCH && (n === 0 || chars + this.pending[n].size <= this.maxBatchChars)) chars += this.pending[n++].size;
    const batch = this.pending.splice(0, n);
    try {
      await this.client.events(this.taskId, { leaseToken: this.leaseToken, events: batch.map((p) => p.event) });
      this.failures = 0;
    } catch (err) {
      const status = err instanceof HttpError ? err.status : 0;
      if (status === 409 || status === 404 || status === 401) {
        this.stale = true;
        this.pending = [];
        this.onStale();
      } else if (status === 413 && batch.length > 1) {
        // Larger than the server takes after all: smaller batches from now on.
        this.pending.unshift(...batch);
        this.maxBatchChars = Math.max(1, Math.floor(chars / 2));
      } else if (status === 0 || status === 429 || status >= 500) {
        // The client retried already; keep the events and try again after a pause.
        this.pending.unshift(...batch);
        await sleep(backoff(this.failures++, 500, 10_000));
      } else {
        // A batch the server will never take: dropped, not retried forever.
        this.log(`${batch.length} timeline events of ${this.taskId} were refused (${status}): ${(err as Error).message}`);
      }
    }
  }
}
