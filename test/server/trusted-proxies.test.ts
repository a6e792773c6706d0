// Behind a reverse proxy every client reaches ao from the proxy's address. AO_TRUSTED_PROXIES names
// the proxies whose X-Forwarded-For ao believes, so failed sign-ins, open device sign-ins and
// connections are counted per client again; from any other address the header is ignored, so a
// client cannot choose the address it is counted as. 127.0.0.1 plays the proxy, 127.0.0.2 (also
// loopback on Linux) a client that reaches ao directly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { rawHttp } from "../helpers/raw-http";
import { FAILURES_PER_ADDRESS } from "../../src/modules/auth/limits";
import { defaultConfig } from "../../src/server/config";
import net from "node:net";

let s: TestServer;
let admin: Session;
beforeAll(async () => {
  s = await startTestServer({ trustedProxies: ["127.0.0.1", "10.0.0.0/8"] });
  admin = await createAdmin(s);
});
afterAll(() => s.stop());

/** A sign-in as sent through the proxy for `forwardedFor`. */
const signIn = (forwardedFor: string, password: string, email = admin.email) =>
  s.api("POST", "/auth/login", { body: { email, password }, headers: { "x-forwarded-for": forwardedFor } });

/** Starts a device sign-in from `localAddress` and reads the address its approver is shown. */
async function deviceSignInAddress(localAddress: string, forwardedFor: string): Promise<string> {
  const body = "{}";
  const r = await rawHttp(
    s.server.port!,
    `POST /api/v1/auth/device/start HTTP/1.1\nHost: ao\nContent-Type: application/json\nContent-Length: ${body.length}\nX-Forwarded-For: ${forwardedFor}`,
    { body, localAddress },
  );
  expect(r.status).toBe(200);
  const shown = await s.api("GET", `/auth/device/${JSON.parse(r.body).userCode}`, { token: admin.accessToken });
  expect(shown.status).toBe(200);
  return shown.body.requestIp;
}

describe("AO_TRUSTED_PROXIES", () => {
  test("from a trusted proxy, failed sign-ins count against the forwarded client: its neighbour still signs in", async () => {
    for (let i = 0; i < FAILURES_PER_ADDRESS; i++) {
      expect((await signIn("203.0.113.7", "wrong password", `ghost${i}@example.test`)).status).toBe(401);
    }
    expect((await signIn("203.0.113.7", "correct horse battery staple")).status).toBe(429);
    // A client that writes its own X-Forwarded-For is still the address the proxy appended.
    expect((await signIn("198.51.100.1, 203.0.113.7", "correct horse battery staple")).status).toBe(429);
    // Through a second trusted hop (10.0.0.0/8), the client is the last untrusted address.
    expect((await signIn("203.0.113.7, 10.1.2.3", "correct horse battery staple")).status).toBe(429);
    expect((await signIn("203.0.113.8", "correct horse battery staple")).status).toBe(200);
  });

  test("the address a device sign-in's approver sees is the client's, and only a trusted proxy can say so", async () => {
    expect(await deviceSignInAddress("127.0.0.1", "203.0.113.9")).toBe("203.0.113.9");
    expect(await deviceSignInAddress("127.0.0.2", "203.0.113.9")).toBe("127.0.0.2");
  });

  test("a value that is not an address or a CIDR range is refused at start", () => {
    const before = process.env.AO_TRUSTED_PROXIES;
    try {
      process.env.AO_TRUSTED_PROXIES = "10.0.0.1, 172.16.0.0/12 ,::1";
      expect(defaultConfig().trustedProxies).toEqual(["10.0.0.1", "172.16.0.0/12", "::1"]);
      for (const bad of ["caddy", "10.0.0.0/33", "10.0.0.1/8/2"]) {
        process.env.AO_TRUSTED_PROXIES = bad;
        expect(() => defaultConfig()).toThrow(`AO_TRUSTED_PROXIES must be addresses or CIDR ranges separated by commas, got ${bad}`);
      }
    } finally {
      if (before === undefined) delete process.env.AO_TRUSTED_PROXIES;
      else process.env.AO_TRUSTED_PROXIES = before;
    }
  });
});

describe("connections per client address behind a trusted proxy", () => {
  test("each forwarded client has its own cap: one that holds its connections does not shut out the others", async () => {
    const capped = await startTestServer({ trustedProxies: ["127.0.0.1"], connections: { perAddress: 2, idleSec: 10, requestSec: 60 } });
    const held: net.Socket[] = [];
    try {
      // Logins whose bodies never finish stay in flight, as a proxy's slow client would.
      for (let i = 0; i < 2; i++) {
        const socket = net.connect({ port: capped.server.port!, host: "127.0.0.1" });
        socket.on("error", () => {});
        socket.write("POST /api/v1/auth/login HTTP/1.1\r\nHost: ao\r\nX-Forwarded-For: 203.0.113.7\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
        held.push(socket);
      }
      while (capped.server.pendingRequests < 2) await Bun.sleep(5);
      const health = (forwardedFor: string) => rawHttp(capped.server.port!, `GET /api/v1/health HTTP/1.1\nHost: ao\nX-Forwarded-For: ${forwardedFor}`);
      expect((await health("203.0.113.7")).status).toBe(429);
      expect((await health("203.0.113.8")).status).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
      await capped.stop();
    }
  });
});

describe("without AO_TRUSTED_PROXIES", () => {
  test("X-Forwarded-For is ignored: the approver sees the connection's address", async () => {
    const plain = await startTestServer();
    try {
      const owner = await createAdmin(plain);
      const r = await plain.api("POST", "/auth/device/start", { body: {}, headers: { "x-forwarded-for": "203.0.113.9" } });
      const shown = await plain.api("GET", `/auth/device/${r.body.userCode}`, { token: owner.accessToken });
      expect(shown.body.requestIp).toBe("127.0.0.1");
    } finally {
      await plain.stop();
    }
  });
});
