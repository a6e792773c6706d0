import type { Logger } from "./core";

/** One line per message on stderr: time, level, message, then key=value fields. Never pass secrets. */
export function createLogger(quiet = false): Logger {
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    if (quiet && level === "info") return;
    const rest = fields ? " " + Object.entries(fields).map(([k, v]) => `${k}=${typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v)}`).join(" ") : "";
    process.stderr.write(`${new Date().toISOString()} ${level} ${message}${rest}\n`);
  };
  return {
    info: (m, f) => line("info", m, f),
    warn: (m, f) => line("warn", m, f),
    error: (m, f) => line("error", m, f),
  };
}

/**
 * Repeats of one warning or error (same level, message and cause) are logged once per interval:
 * a full disk made every tick and request log the same stack trace thousands of times a second.
 * The next line after a quiet interval says how many were left out (`repeated`). The cause is
 * `fields.cause` when given, else the first line of `fields.error`.
 */
export function withoutRepeats(log: Logger, intervalMs = 60_000, now: () => number = Date.now): Logger {
  const seen = new Map<string, { at: number; skipped: number }>();
  const limited = (level: "warn" | "error") => (message: string, fields?: Record<string, unknown>) => {
    const cause = fields?.cause ?? String(fields?.error ?? "").split("\n")[0];
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
