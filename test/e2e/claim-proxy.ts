// A pass-through in front of a test server that rewrites the claim answers a worker gets: it
// stands in for the code-hosting app's part of the claim (a repository token, push: true) in tests
// of the worker's side. Claims come over HTTP or as requests on the worker's socket; both answers
// are rewritten. Everything else goes through unchanged.
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
  /** Ids of the claim requests sent on the socket, whose replies are rewritten. */
  claims: Set<number>;
}

export function startClaimProxy(upstream: string, rewrite: (claim: ClaimResult) => ClaimResult): ClaimProxy {
  const server = Bun.serve<SocketData>({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req, srv) {
      const u = new URL(req.url);
      const target = upstream + u.pathname + u.search;
      if (req.headers.get("upgrade")?.toLowerCase() === "websocket") {
        const ok = srv.upgrade(req, { data: { target: target.replace(/^http/, "ws"), authorization: req.headers.get("authorization"), queue: [], claims: new Set() } });
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
        up.onmessage = (e) => {
          if (typeof e.data !== "string") return void ws.send(new Uint8Array(e.data as ArrayBuffer));
          const m = JSON.parse(e.data);
          if (m.type === "reply" && ws.data.claims.delete(m.id) && m.status === 200) return void ws.send(JSON.stringify({ ...m, body: rewrite(m.body as ClaimResult) }));
          ws.send(e.data);
        };
        up.onclose = () => ws.close();
      },
      message(ws, message) {
        let m: { type?: string; op?: string; id?: number } | null = null;
        try {
          m = JSON.parse(String(message));
        } catch {}
        if (m?.type === "request" && m.op === "claim") ws.data.claims.add(m.id!);
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
