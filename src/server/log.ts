// The server's log: one JSON object per line on stderr (pino), or a readable line per message for a
// person at a terminal (AO_LOG_FORMAT=pretty). Never pass secrets; the redaction below is a last guard.
import { writeSync } from "node:fs";
import pino from "pino";
import type { Logger } from "./core";

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = "json" | "pretty";

/** Where lines go; anything with write(line). Tests pass a collector. */
export interface LogSink {
  write(line: string): void;
}

export interface LogOptions {
  level?: LogLevel;
  format?: LogFormat;
  sink?: LogSink;
}

// Field names that carry credentials somewhere in ao. A caller that passes one by mistake logs "[redacted]".
const SECRET_KEYS = new Set(["password", "token", "accessToken", "refreshToken", "secret", "authorization", "cookie", "leaseToken", "credential"]);

/**
 * The fields with any secret-named key (at the top or one level down) blanked. Checked by hand:
 * pino's path redaction cost about 10 us a line, as much as the rest of a request's log line.
 */
function guarded(fields: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!fields) return {};
  let copy: Record<string, unknown> | null = null;
  for (const key in fields) {
    const value = fields[key];
    let clean = value;
    if (SECRET_KEYS.has(key)) clean = "[redacted]";
    else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const inner in value) {
        if (SECRET_KEYS.has(inner)) {
          clean = { ...(value as Record<string, unknown>) };
          for (const k in clean as Record<string, unknown>) if (SECRET_KEYS.has(k)) (clean as Record<string, unknown>)[k] = "[redacted]";
          break;
        }
      }
    }
    if (clean !== value) (copy ??= { ...fields })[key] = clean;
  }
  return copy ?? fields;
}

export function createLogger(options: LogOptions = {}): Logger {
  // No transport: pino's transports run in worker threads, which a `bun build --compile` executable
  // does not carry.
  const out = options.sink ?? linesByTurn(2);
  const sink = options.format === "pretty" ? prettySink(out) : out;
  const logger = pino(
    {
      level: options.level ?? "info",
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    sink as pino.DestinationStream,
  );
  return {
    info: (m, f) => logger.info(guarded(f), m),
    warn: (m, f) => logger.warn(guarded(f), m),
    error: (m, f) => logger.error(guarded(f), m),
  };
}

/** One sink per descriptor in a process (every server of a test process shares stderr's, in order). */
const sinks = new Map<number, { sink: LogSink; flush: () => void }>();

function flushAtExit() {
  for (const { flush } of sinks.values()) flush();
}

/**
 * A file descriptor (stderr) written once per event-loop turn: the lines of one turn (under load,
 * every request a group commit answered) leave in one write instead of one write each (a write per
 * request line was 10% of the server's time in bench/vs-bullmq.ts). A line is written by the end
 * of the turn that logged it, and the lines left when the process exits are written then; a
 * process killed with SIGKILL loses at most its last turn's lines.
 */
export function linesByTurn(fd: number): LogSink {
  const made = sinks.get(fd);
  if (made) return made.sink;
  let lines: string[] = [];
  let chars = 0;
  let pending = false;
  const flush = () => {
    pending = false;
    if (!lines.length) return;
    const text = lines.join("");
    lines = [];
    chars = 0;
    writeAll(fd, text);
  };
  const sink = {
    write(line: string) {
      lines.push(line);
      chars += line.length;
      // A turn that logs a great deal is written in parts: memory stays bounded.
      if (chars >= 256 * 1024) flush();
      else if (!pending) {
        pending = true;
        setImmediate(flush);
      }
    },
  };
  if (!sinks.size) process.once("exit", flushAtExit);
  sinks.set(fd, { sink, flush });
  return sink;
}

/** Writes all of text, waiting out a full non-blocking pipe; a closed one drops the lines (a log never stops the server). */
function writeAll(fd: number, text: string) {
  let buf = Buffer.from(text);
  while (buf.length) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return;
      Bun.sleepSync(1);
    }
  }
}

/**
 * Repeats of one warning or error (same level, message and cause) are logged once per interval:
 * a full disk made every tick and request log the same stack trace thousands of times a second.
 * The next line after a quiet interval says how many were left out (`repeated`). The cause is
 * `fields.cause` when given, else the request's id, else the first line of `fields.error`.
 */
export function withoutRepeats(log: Logger, intervalMs = 60_000, now: () => number = Date.now): Logger {
  const seen = new Map<string, { at: number; skipped: number }>();
  const limited = (level: "warn" | "error") => (message: string, fields?: Record<string, unknown>) => {
    // Each request's own line (observe.ts logs a 5xx at error level) is never a repeat of another's.
    const cause = fields?.cause ?? fields?.requestId ?? String(fields?.error ?? "").split("\n")[0];
    const key = `${level}\u0000${message}\u0000${String(cause)}`;
    const t = now();
    const entry = seen.get(key);
    if (entry && t - entry.at < intervalMs) {
      entry.skipped++;
      return;
    }
    if (seen.size > 1000) for (const [k, e] of seen) if (t - e.at >= intervalMs) seen.delete(k);
    seen.set(key, { at: t, skipped: 0 });
    log[level](message, entry?.skipped ? { ...fields, repeated: entry.skipped } : fields);
  };
  return { info: (m, f) => log.info(m, f), warn: limited("warn"), error: limited("error") };
}

const BASE_KEYS = new Set(["level", "time", "msg", "pid", "hostname"]);

/** Turns pino's JSON lines into `time level message key=value ...` for a person. */
function prettySink(out: LogSink): LogSink {
  return {
    write(line: string) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line);
      } catch {
        out.write(line);
        return;
      }
      const fields = Object.entries(entry)
        .filter(([k]) => !BASE_KEYS.has(k))
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
      out.write([entry.time, String(entry.level).toUpperCase().padEnd(5), entry.msg, ...fields].join(" ") + "\n");
    },
  };
}

/** AO_LOG_LEVEL and AO_LOG_FORMAT, checked (a typo must not silently hide every line). */
export function logSettingsFromEnv(env: Record<string, string | undefined> = process.env): { level: LogLevel; format: LogFormat } {
  const level = (env.AO_LOG_LEVEL || "info").toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new Error(`AO_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got ${env.AO_LOG_LEVEL}`);
  const format = (env.AO_LOG_FORMAT || "json").toLowerCase();
  if (format !== "json" && format !== "pretty") throw new Error(`AO_LOG_FORMAT must be json or pretty, got ${env.AO_LOG_FORMAT}`);
  return { level: level as LogLevel, format };
}
