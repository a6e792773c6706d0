// A small tar (POSIX ustar + pax) writer and reader, enough for ao's backups: regular files only,
// long paths through pax headers. Bun has no tar, and the executable must run alone (no system
// `tar`); what it writes, GNU and BSD tar read (`tar -tvf backup.tar`).
import { readSync } from "node:fs";

const BLOCK = 512;
const MAX_OCTAL_SIZE = 8 ** 11 - 1;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export interface TarEntry {
  path: string;
  size: number;
  mode?: number;
  mtime?: Date;
  /** Exactly `size` bytes, in chunks. */
  data: Uint8Array | AsyncIterable<Uint8Array>;
}

function putString(block: Uint8Array, offset: number, length: number, value: string) {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new Error(`tar: "${value}" does not fit in ${length} bytes`);
  block.set(bytes, offset);
}

function putOctal(block: Uint8Array, offset: number, length: number, value: number) {
  putString(block, offset, length, value.toString(8).padStart(length - 1, "0") + "\0");
}

function header(path: string, size: number, mode: number, mtime: number, type: string): Uint8Array {
  const block = new Uint8Array(BLOCK);
  putString(block, 0, 100, path);
  putOctal(block, 100, 8, mode);
  putOctal(block, 108, 8, 0);
  putOctal(block, 116, 8, 0);
  putOctal(block, 124, 12, size);
  putOctal(block, 136, 12, mtime);
  block.fill(0x20, 148, 156);
  putString(block, 156, 1, type);
  putString(block, 257, 6, "ustar\0");
  putString(block, 263, 2, "00");
  let sum = 0;
  for (const b of block) sum += b;
  putString(block, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  return block;
}

/** One pax record: "<length> <key>=<value>\n", the length counting itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = encoder.encode(body).length + 1;
  while (String(length).length + encoder.encode(body).length !== length) length++;
  return `${length}${body}`;
}

const padding = (size: number) => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);

/** The archive of `entries` as a stream of chunks; throws if an entry's data is not `size` bytes. */
export async function* tarStream(entries: AsyncIterable<TarEntry> | Iterable<TarEntry>): AsyncGenerator<Uint8Array> {
  for await (const entry of entries) {
    const mtime = Math.floor((entry.mtime ?? new Date()).getTime() / 1000);
    const pax: string[] = [];
    if (encoder.encode(entry.path).length > 100) pax.push(paxRecord("path", entry.path));
    if (entry.size > MAX_OCTAL_SIZE) pax.push(paxRecord("size", String(entry.size)));
    if (pax.length > 0) {
      const data = encoder.encode(pax.join(""));
      yield header("PaxHeader/entry", data.length, 0o644, mtime, "x");
      yield data;
      yield padding(data.length);
    }
    const shortPath = pax.length > 0 && encoder.encode(entry.path).length > 100 ? entry.path.slice(-90).replace(/^[^/]*\//, "") : entry.path;
    yield header(shortPath, Math.min(entry.size, MAX_OCTAL_SIZE), entry.mode ?? 0o644, mtime, "0");
    let written = 0;
    for await (const chunk of entry.data instanceof Uint8Array ? [entry.data] : entry.data) {
      written += chunk.byteLength;
      if (written > entry.size) throw new Error(`tar: ${entry.path} is longer than its ${entry.size} bytes`);
      yield chunk;
    }
    if (written !== entry.size) throw new Error(`tar: ${entry.path} has ${written} of its ${entry.size} bytes`);
    yield padding(entry.size);
  }
  yield new Uint8Array(BLOCK * 2);
}

export interface TarFileHeader {
  path: string;
  size: number;
  mode: number;
}

function readFully(fd: number, length: number): Uint8Array | null {
  const buf = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    let n: number;
    try {
      n = readSync(fd, buf, got, length - got, null);
    } catch (err) {
      // A non-blocking pipe (standard input) with nothing yet: wait for the writer.
      if ((err as { code?: string }).code !== "EAGAIN") throw err;
      Bun.sleepSync(5);
      continue;
    }
    if (n === 0) return got === 0 ? null : buf.subarray(0, got);
    got += n;
  }
  return buf;
}

const cString = (block: Uint8Array, offset: number, length: number) => {
  const slice = block.subarray(offset, offset + length);
  const end = slice.indexOf(0);
  return decoder.decode(end === -1 ? slice : slice.subarray(0, end));
};
const octal = (block: Uint8Array, offset: number, length: number) => parseInt(cString(block, offset, length).trim() || "0", 8);

/**
 * Reads the archive on `fd` front to back (a file or a pipe): calls `onFile` for each regular file
 * with its header and a reader of its bytes in chunks. Refuses anything but files, directories and
 * pax headers, and an archive that ends early or has a bad checksum.
 */
export function readTar(fd: number, onFile: (header: TarFileHeader, read: () => Iterable<Uint8Array>) => void) {
  let pax: Record<string, string> = {};
  for (;;) {
    const block = readFully(fd, BLOCK);
    if (!block || block.length < BLOCK) throw new Error("the archive ends early (no end marker)");
    if (block.every((b) => b === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
    if (sum !== octal(block, 148, 8)) throw new Error("the archive is damaged (bad header checksum)");
    const type = String.fromCharCode(block[156] || 0x30);
    const prefix = cString(block, 345, 155);
    const name = cString(block, 0, 100);
    const path = pax.path ?? (prefix ? `${prefix}/${name}` : name);
    const size = pax.size !== undefined ? Number(pax.size) : octal(block, 124, 12);
    pax = {};
    let left = size;
    const chunks = function* () {
      while (left > 0) {
        const chunk = readFully(fd, Math.min(left, 1 << 20));
        if (!chunk || chunk.length < Math.min(left, 1 << 20)) throw new Error("the archive ends early");
        left -= chunk.length;
        yield chunk;
      }
    };
    if (type === "x") {
      const text = decoder.decode(concat([...chunks()]));
      for (const line of text.split("\n")) {
        const m = /^\d+ ([^=]+)=(.*)$/s.exec(line);
        if (m) pax[m[1]] = m[2];
      }
    } else if (type === "g" || type === "5") {
      for (const _ of chunks());
    } else if (type === "0") {
      onFile({ path, size, mode: octal(block, 100, 8) }, chunks);
      for (const _ of chunks());
    } else {
      throw new Error(`the archive holds ${path}, which is not a regular file`);
    }
    const pad = (BLOCK - (size % BLOCK)) % BLOCK;
    if (pad > 0 && (readFully(fd, pad)?.length ?? 0) < pad) throw new Error("the archive ends early");
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
