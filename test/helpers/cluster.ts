// Several ao servers acting as one service: in-process test servers on one fresh PostgreSQL
// database, sharing one master key file (as AO_MASTER_KEY_FILE shares it between real servers).
// Tests that use it need PostgreSQL (Debian's package, started by test/helpers/postgres.ts) and run
// in either mode of the suite.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StartOptions } from "../../src/server/serve";
import { freshDatabase } from "./postgres";
import { startTestServer, type TestServer } from "./server";

export interface Cluster {
  servers: TestServer[];
  databaseUrl: string;
  /** Starts one more server on the same database and key (after a stop, say). */
  add(options?: StartOptions): Promise<TestServer>;
  stop(): Promise<void>;
}

/** Starts `count` servers on one new database; `options` go to each (per-server ones through add()). */
export async function startCluster(count = 2, options: StartOptions = {}): Promise<Cluster> {
  const databaseUrl = await freshDatabase("ao_cluster");
  const keyDir = mkdtempSync(join(tmpdir(), "ao-cluster-key-"));
  const masterKeyFile = join(keyDir, "master.key");
  const servers: TestServer[] = [];
  const add = async (more: StartOptions = {}) => {
    const server = await startTestServer({ ...options, ...more, databaseUrl, masterKeyFile });
    servers.push(server);
    return server;
  };
  // One after another: the first writes the key file and migrates; the rest find both done.
  for (let i = 0; i < count; i++) await add();
  return {
    servers,
    databaseUrl,
    add,
    async stop() {
      await Promise.allSettled(servers.map((s) => s.stop()));
      rmSync(keyDir, { recursive: true, force: true });
    },
  };
}
