// The worker's credential: paired once by device code, then kept in <data-dir>/credential.json
// with mode 0600 (the directory 0700). It names the server that gave it; it is reused while that
// server is among the worker's servers (all of one service), never for another service.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { HttpError, sleep, type WorkerClient } from "./client";
import type { WorkerOptions } from "./options";

export interface StoredCredential {
  server: string;
  workerId: string;
  orgId: string;
  credential: string;
}

export const credentialPath = (dataDir: string) => join(dataDir, "credential.json");

export function loadCredential(dataDir: string, servers: string[]): StoredCredential | null {
  const path = credentialPath(dataDir);
  if (!existsSync(path)) return null;
  try {
    const c = JSON.parse(readFileSync(path, "utf8")) as StoredCredential;
    return servers.includes(c.server) && typeof c.credential === "string" ? c : null;
  } catch {
    return null;
  }
}

export function saveCredential(dataDir: string, c: StoredCredential) {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = credentialPath(dataDir);
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, JSON.stringify(c, null, 2) + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/**
 * Pairs by device code: prints the code and the link, polls until a person decides. A code that
 * expires is replaced by a new one; a denial ends the worker. With several servers it pairs with
 * the first that answers (any of them can finish it: the code is in their shared database).
 */
export async function pair(client: WorkerClient, options: WorkerOptions, say: (line: string) => void): Promise<StoredCredential> {
  for (;;) {
    const started = await client.pair({ name: options.name, hostname: hostname().slice(0, 255) || "unknown", labels: options.labels });
    say(`ao worker: pairing with ${client.server}`);
    say(`  code: ${started.userCode}`);
    say(`  open: ${started.verificationUriComplete}`);
    say("  waiting for a person to approve it...");
    let interval = started.intervalSec;
    const deadline = Date.now() + started.expiresIn * 1000;
    while (Date.now() < deadline) {
      await sleep(interval * 1000);
      try {
        const result = await client.pollPairing(started.deviceCode);
        const stored = { server: client.server, workerId: result.workerId, orgId: result.orgId, credential: result.credential };
        saveCredential(options.dataDir, stored);
        say(`ao worker: paired as ${result.workerId} (org ${result.orgId})`);
        return stored;
      } catch (err) {
        if (!(err instanceof HttpError)) throw err;
        if (err.code === "authorization_pending") continue;
        if (err.code === "slow_down") {
          interval = Number(err.details?.intervalSec) || interval + 5;
          continue;
        }
        if (err.code === "access_denied") throw new Error("the pairing was denied");
        if (err.code === "expired_token") break;
        throw err;
      }
    }
    say("ao worker: the code expired; here is a new one");
  }
}
