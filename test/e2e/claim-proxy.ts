// A pass-through in front of a test server that rewrites the claim answers a worker gets: it
// stands in for the code-hosting app's part of the claim (a repository token, push: true) in tests
// of the worker's side. Everything else, the worker's socket included, goes through unchanged.
import type { ClaimResult } from "../../src/protocol/requests";

export interface ClaimProxy {
  url: string;
  stop(): Promise<void>;
}

interface SocketData {
  target: string;
  authorization: string | null;
  upstream?: WebSocket;
  queue: (string | Buffer)[];
}

export function startClaimProxy(upstream: string, rewrite: (claim: ClaimResult) => ClaimResult): ClaimProxy {
  const server = Bun.serve<SocketData>({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req, srv) {
      const u = new URL(req.url);
      const target = upstream + u.pathname + u.search;
      if (req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        const ok = srv.upgrade(req, { data: { target: target.replace(/^http/, "ws"), authorization: req.headers.get("authorization"), queue: [] } });
        return ok ? undefined : new Response("upgrade failed", { status: 400 });
      }
      const headers = new Headers(req.headers);
      headers.delete("host");
      const res = await fetch(target, { method: req.method, headers, body: req.body ? await req.arrayBuffer() : undefined, redirect: "manual" });
      if (req.method === "POST" && /\/worker\/tasks\/[^/]+\/claim$/.test(u.pathname) && res.status === 200) {
        const claim = rewrite((await res.json()) as ClaimResult);
        return Response.json(claim, { status: 200 });
      }
      return new Response(res.body, { status: res.status, headers: res.headers });
    },
    websocket: {
      open(ws) {
        const up = new WebSocket(ws.data.target, { headers: ws.data.authorization ? { authorization: ws.data.authorization } : {} } as unknown as string[]);
        ws.data.upstream = up;
        up.onopen = () => {
          for (const m of ws.data.queue.splice(0)) up.send(m);
        };
        up.onmessage = (e) => ws.send(typeof e.data === "string" ? e.data : new Uint8Array(e.data as ArrayBuffer));
        up.onclose = () => ws.close();
      },
      message(ws, message) {
        const up = ws.data.upstream;
        if (up?.readyState === WebSocket.OPEN) up.send(message);
        else ws.data.queue.push(message);
      },
      close(ws) {
        ws.data.upstream?.close();
      },
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    async stop() {
      await server.stop(true);
    },
  };
}
