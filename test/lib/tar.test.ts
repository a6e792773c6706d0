// The tar writer and reader against the system's tar: each reads what the other writes, long
// paths included (pax headers).
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readTar, tarStream } from "../../src/lib/tar";

const dir = mkdtempSync(join(tmpdir(), "ao-tar-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const long = `artifacts/tsk_01abc/${"x".repeat(120)}.bin`;

describe("tar", () => {
  test("system tar lists and extracts what tarStream writes, byte for byte", async () => {
    const a = crypto.getRandomValues(new Uint8Array(1000));
    const b = crypto.getRandomValues(new Uint8Array(512));
    const chunks: Uint8Array[] = [];
    for await (const c of tarStream([
      { path: "one.txt", size: a.length, data: a },
      { path: long, size: b.length, mode: 0o600, data: (async function* () { yield b.subarray(0, 100); yield b.subarray(100); })() },
      { path: "empty", size: 0, data: new Uint8Array(0) },
    ])) chunks.push(c);
    const archive = join(dir, "ours.tar");
    writeFileSync(archive, Buffer.concat(chunks));
    expect(Bun.spawnSync(["tar", "-tf", archive]).stdout.toString().trim().split("\n")).toEqual(["one.txt", long, "empty"]);
    const out = join(dir, "out");
    mkdirSync(out);
    expect(Bun.spawnSync(["tar", "-C", out, "-xf", archive]).exitCode).toBe(0);
    expect(new Uint8Array(readFileSync(join(out, "one.txt")))).toEqual(a);
    expect(new Uint8Array(readFileSync(join(out, long)))).toEqual(b);
  });

  test("an entry whose data is shorter than its size is an error, not a short archive", async () => {
    const gen = tarStream([{ path: "x", size: 10, data: new Uint8Array(5) }]);
    await expect((async () => { for await (const _ of gen); })()).rejects.toThrow(/has 5 of its 10 bytes/);
  });

  test("readTar reads what system tar writes in pax format", () => {
    const src = join(dir, "src");
    mkdirSync(join(src, "artifacts", "tsk_01abc"), { recursive: true });
    const bytes = crypto.getRandomValues(new Uint8Array(3000));
    writeFileSync(join(src, long), bytes);
    const archive = join(dir, "theirs.tar");
    expect(Bun.spawnSync(["tar", "--format=pax", "-C", src, "-cf", archive, long]).exitCode).toBe(0);
    const seen: { path: string; size: number; data: Uint8Array }[] = [];
    const fd = openSync(archive, "r");
    try {
      readTar(fd, (h, read) => seen.push({ path: h.path, size: h.size, data: Buffer.concat([...read()]) }));
    } finally {
      closeSync(fd);
    }
    expect(seen.map((e) => [e.path, e.size])).toEqual([[long, 3000]]);
    expect(new Uint8Array(seen[0].data)).toEqual(bytes);
  });
});
