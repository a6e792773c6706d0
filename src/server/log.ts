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
