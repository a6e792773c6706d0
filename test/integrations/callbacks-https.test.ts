// Callbacks to an https receiver: the relay connects to the address it checked but verifies the
// certificate against the URL's host name and sends that name as Host. Runs in a child process
// (tls-child.ts) that trusts the test-only certificate for "localhost" through NODE_EXTRA_CA_CERTS.
import { expect, test } from "bun:test";
import { join } from "node:path";

test("https callback: delivered by name with the certificate checked; refused when the certificate does not name the host", async () => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "tls-child.ts")], {
    cwd: join(import.meta.dir, "..", ".."),
    env: { ...process.env, NODE_EXTRA_CA_CERTS: join(import.meta.dir, "fixtures", "tls-localhost-cert.pem") },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`tls-child.ts exited ${code}:\n${err}`);
  const r = JSON.parse(out.trim().split("\n").pop()!);

  expect(r.byName.row).toMatchObject({ status: "succeeded", attempts: 1 });
  expect(r.byName.received).toHaveLength(1);
  expect(r.byName.received[0].host).toBe(`localhost:${r.port}`);
  expect(JSON.parse(r.byName.received[0].body)).toMatchObject({ title: "byName", event: "completed" });

  expect(r.byAddress.row.status).toBe("pending");
  expect(r.byAddress.row.last_error).toMatch(/cert|TLS|altname/i);
  expect(r.byAddress.received).toEqual([]);
}, 30_000);
