// POST /admin/backup: the same archive as `ao backup`, streamed to an instance administrator.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { ApiError, ErrorBody } from "../../server/errors";
import { noBody } from "../../server/strict";
import { BackupError, POSTGRES_BACKUP, prepareBackup } from "./service";

export default (core: Core) =>
  new Elysia({ name: "backup", seed: core.instanceId, prefix: "/api/v1", tags: ["admin"] }).use(authPlugin(core)).post(
    "/admin/backup",
    async () => {
      if (core.config.databaseUrl) throw new ApiError(501, "backup_unavailable", POSTGRES_BACKUP);
      let prepared;
      try {
        prepared = await prepareBackup(core.config.dataDir, core.config.masterKeyFile);
      } catch (err) {
        if (err instanceof BackupError) throw new ApiError(500, "backup_failed", err.message);
        throw err;
      }
      const chunks = prepared.chunks;
      const stamp = new Date().toISOString().replace(/[:.]/g, "-");
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await chunks.next();
            if (next.done) controller.close();
            else controller.enqueue(next.value);
          } catch (err) {
            // The status is sent: the archive ends without its end marker, which restore refuses.
            core.log.error("backup failed while streaming", { error: String((err as Error)?.stack ?? err) });
            controller.error(err);
          }
        },
        async cancel() {
          await chunks.return(undefined);
        },
      });
      return new Response(body, {
        headers: {
          "content-type": "application/x-tar",
          "content-disposition": `attachment; filename="ao-backup-${stamp}.tar"`,
          "cache-control": "no-store",
        },
      });
    },
    {
      auth: "admin",
      ...noBody,
      detail: {
        summary: "Back up the instance (tar archive)",
        description:
          "Streams a consistent copy of the data directory while the server runs: ao-backup.json, artifacts/<taskId>/<name>, master.key, ao.db (the layout of `ao backup`). Restore it with `ao restore FILE --data-dir NEWDIR`. It holds the master key: keep it private. 507 insufficient_storage when the temporary copy of the database does not fit.",
        responses: {
          200: { description: "the archive", content: { "application/x-tar": { schema: { type: "string", format: "binary" } } } },
          ...Object.fromEntries(
            [
              [400, "validation_failed (a body with fields: it takes none)"],
              [401, "unauthorized"],
              [403, "forbidden (not an instance administrator's session)"],
              [500, "backup_failed (the data directory cannot be read)"],
              [501, "backup_unavailable (ao runs on PostgreSQL: back it up with PostgreSQL's tools)"],
              [507, "insufficient_storage"],
            ].map(([status, description]) => [status, { description, content: { "application/json": { schema: ErrorBody } } }]),
          ),
        },
      },
    },
  );
