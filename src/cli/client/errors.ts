// What a command can fail with, and the exit code each means: 2 for a wrong command line,
// 1 for everything the server or the machine refused.
export class UsageError extends Error {}

/** A failure to report as is (not signed in, file unreadable, server unreachable). */
export class CliError extends Error {}

/** The server did not answer at all (down, wrong address, timeout): worth trying again later. */
export class Unreachable extends CliError {}

/** An answer of the API in its error format. */
export class ApiFailure extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly details?: unknown,
  ) {
    super(message);
  }
}

export const EXIT = { ok: 0, failed: 1, usage: 2, attention: 3 } as const;

/** Prints the error the way a person can act on it and returns the exit code. */
export function report(err: unknown, usageHint?: string): number {
  if (err instanceof UsageError) {
    console.error(`ao: ${err.message}`);
    if (usageHint) console.error(usageHint);
    return EXIT.usage;
  }
  if (err instanceof ApiFailure) {
    console.error(`ao: ${err.code}: ${err.message}`);
    for (const line of detailLines(err.details)) console.error(`  ${line}`);
    return EXIT.failed;
  }
  if (err instanceof CliError) {
    console.error(`ao: ${err.message}`);
    return EXIT.failed;
  }
  throw err;
}

function detailLines(details: unknown): string[] {
  if (Array.isArray(details)) {
    return details.map((d) =>
      d && typeof d === "object" && "message" in d ? `${(d as { field?: string }).field ?? ""}${(d as { field?: string }).field ? ": " : ""}${(d as { message: string }).message}` : JSON.stringify(d),
    );
  }
  if (details && typeof details === "object") {
    return Object.entries(details).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : typeof v === "object" ? JSON.stringify(v) : String(v)}`);
  }
  return [];
}
