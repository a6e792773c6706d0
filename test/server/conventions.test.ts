// SPEC §1 conventions the foundation provides: time-sortable prefixed ids, checksummed tokens,
// sealed secrets, and keyset pages whose cursor survives inserts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { newId } from "../../src/lib/ids";
import { constantTimeEqual, isWellFormedToken, newChecksummedToken } from "../../src/lib/tokens";
import { Sealer } from "../../src/lib/seal";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";

describe("ids", () => {
  test("prefix + 26 Crockford base32 characters; strictly increasing in creation order, also within one millisecond", () => {
    const ids = Array.from({ length: 2000 }, () => newId("tsk"));
    for (const id of ids) expect(id).toMatch(/^tsk_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  test("the first 10 characters are the creation time in milliseconds", async () => {
    const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    const timeOf = (id: string) => [...id.slice(4, 14)].reduce((n, ch) => n * 32 + alphabet.indexOf(ch), 0);
    const before = Date.now();
    const a = newId("org");
    await Bun.sleep(5);
    const b = newId("org");
    expect(timeOf(a)).toBeGreaterThanOrEqual(before);
    expect(timeOf(b) - timeOf(a)).toBeGreaterThanOrEqual(4);
    expect(a < b).toBe(true);
  });
});

describe("tokens and secrets", () => {
  test("aot_/aow_ tokens carry a CRC32 checksum; any changed character fails it", () => {
    const t = newChecksummedToken("aot_");
    expect(t).toMatch(/^aot_[0-9A-Za-z]{36}$/);
    expect(isWellFormedToken(t, "aot_")).toBe(true);
    expect(isWellFormedToken(t, "aow_")).toBe(false);
    for (let i = 4; i < t.length; i++) {
      const changed = t.slice(0, i) + (t[i] === "Z" ? "Y" : "Z") + t.slice(i + 1);
      expect([i, isWellFormedToken(changed, "aot_")]).toEqual([i, false]);
    }
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
  });

  test("sealed secrets open only with their key and only unaltered", () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    const sealer = new Sealer(key);
    const sealed = sealer.seal("the secret");
    expect(sealed).not.toContain("the secret");
    expect(sealer.seal("the secret")).not.toBe(sealed); // a fresh nonce each time
    expect(sealer.open(sealed)).toBe("the secret");
    expect(() => new Sealer(crypto.getRandomValues(new Uint8Array(32))).open(sealed)).toThrow();
    const [v, iv, body, tag] = sealed.split(".");
    const flipped = body[0] === "A" ? "B" + body.slice(1) : "A" + body.slice(1);
    expect(() => sealer.open([v, iv, flipped, tag].join("."))).toThrow();
  });
});

describe("keyset pages", () => {
  let s: TestServer;
  let admin: Session;
  beforeAll(async () => {
    s = await startTestServer();
    admin = await createAdmin(s);
  });
  afterAll(() => s.stop());

  test("a cursor stays valid while rows are inserted: no row twice, none skipped", async () => {
    const make = (i: number) => s.api("POST", "/admin/users", { token: admin.accessToken, body: { email: `page${i}@example.test`, password: "long enough pw" } });
    for (let i = 0; i < 5; i++) expect((await make(i)).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    let inserted = 5;
    do {
      const r: { body: { items: { email: string }[]; nextCursor: string | null } } = await s.api("GET", `/admin/users?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { token: admin.accessToken });
      seen.push(...r.body.items.map((u) => u.email));
      cursor = r.body.nextCursor;
      if (inserted < 8) await make(inserted++); // newer than every page: never shows up behind the cursor
    } while (cursor);
    expect(seen).toEqual(["page4@example.test", "page3@example.test", "page2@example.test", "page1@example.test", "page0@example.test", admin.email]);
    const all = await s.api("GET", "/admin/users?limit=200", { token: admin.accessToken });
    expect(all.body.items.length).toBe(9);
    expect((await s.api("GET", "/admin/users", { token: admin.accessToken })).body.nextCursor).toBeNull(); // default page of 50
  });
});
