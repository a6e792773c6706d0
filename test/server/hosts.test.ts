// Routing is by path alone, whatever the Host header says: short hosts and the `Host: ao:80` nginx
// sends for `proxy_pass http://ao;` reach the same routes as any other.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { rawHttp } from "../helpers/raw-http";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const get = (path: string, host: string) => rawHttp(s.server.port!, `GET ${path} HTTP/1.1\nHost: ${host}\nConnection: close`);

describe("any Host header", () => {
  test.each(["a", "ab", "abc", "ao:80", "ao", "localhost", "127.0.0.1:7070", "[::1]:80"])("Host: %s routes /api/v1/health to health", async (host) => {
    const r = await get("/api/v1/health", host);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).status).toBe("ok");
  });

  test.each(["a", "ao:80", "abc"])("Host: %s does not route /zzz/api/v1/health to health", async (host) => {
    const r = await get("/zzz/api/v1/health", host);
    // A path outside /api/ is a page address: the HTML 404 page, not health's JSON.
    expect(r.status).toBe(404);
    expect(r.body).toContain("Page not found");
    expect(r.body).not.toContain('"status":"ok"');
  });

  test("Host: a reaches a route with a body and a query", async () => {
    const body = JSON.stringify({ email: "nobody@example.com", password: "wrong" });
    const r = await rawHttp(s.server.port!, `POST /api/v1/auth/login HTTP/1.1\nHost: a\nContent-Type: application/json\nContent-Length: ${body.length}\nConnection: close`, { body });
    expect(r.status).toBe(401);
    // The route's own answer to a parameter it does not take: the request was routed, query and all.
    const takesNone = [{ field: "x", message: "is not a parameter of this route, which takes none" }];
    const login = await rawHttp(s.server.port!, `POST /api/v1/auth/login?x=/a/b HTTP/1.1\nHost: a\nContent-Type: application/json\nContent-Length: ${body.length}\nConnection: close`, { body });
    expect([login.status, JSON.parse(login.body).error.details]).toEqual([400, takesNone]);
    const health = await get("/api/v1/health?x=/a/b", "a");
    expect([health.status, JSON.parse(health.body).error.details]).toEqual([400, takesNone]);
  });
});

// Debian's nginx, started here on loopback, proxying as the README's example does (proxy_pass http://ao;).
const NGINX = "/usr/sbin/nginx";
if (!existsSync(NGINX)) console.warn(`SKIPPED: the reverse-proxy tests need Debian's nginx at ${NGINX} (apt-get install nginx-light; .ci/run installs it)`);
describe.skipIf(!existsSync(NGINX))("behind nginx with proxy_pass http://ao;", () => {
  let dir: string;
  let proxy: ReturnType<typeof Bun.spawn>;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ao-nginx-"));
    for (const d of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, d));
    const port = await freePort();
    writeFileSync(
      join(dir, "nginx.conf"),
      `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream ao { server 127.0.0.1:${s.server.port}; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://ao;
    }
  }
}
`,
    );
    proxy = Bun.spawn([NGINX, "-e", join(dir, "error.log"), "-p", dir, "-c", join(dir, "nginx.conf")], { stdout: "ignore", stderr: "pipe" });
    base = `http://127.0.0.1:${port}`;
    await untilListening(port, proxy, dir);
  });
  afterAll(async () => {
    proxy?.kill();
    await proxy?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  test("health, an authenticated route and an unknown path answer through the proxy as they do directly", async () => {
    const health = await fetch(`${base}/api/v1/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe("ok");
    const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "x@example.com", password: "no" }) });
    expect(login.status).toBe(401);
    const me = await fetch(`${base}/api/v1/me`);
    expect(me.status).toBe(401);
    const prefixed = await fetch(`${base}/zzz/api/v1/health`);
    expect(prefixed.status).toBe(404);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Waits until nginx accepts connections, failing with its error log if it exits first. */
async function untilListening(port: number, child: ReturnType<typeof Bun.spawn>, dir: string) {
  let exited = false;
  void child.exited.then(() => (exited = true));
  for (;;) {
    if (exited) throw new Error(`nginx exited: ${readFileSync(join(dir, "error.log"), "utf8")}`);
    const up = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, "127.0.0.1", () => (c.destroy(), resolve(true)));
      c.on("error", () => resolve(false));
    });
    if (up) return;
    await Bun.sleep(20);
  }
}
