// Codex with the bubblewrap it ships. Where Debian's bubblewrap is installed (CI installs it for the
// worker's confinement), Codex prefers /usr/bin/bwrap to its own, so the other Codex suites run
// that one (src/worker/agents/codex-helper.ts). Here Codex runs in a mount namespace of its own in
// which /usr/bin/bwrap is /dev/null (there, but not executable), as on a machine without bubblewrap,
// and its sandbox must hold just the same. The namespace is `unshare --mount`'s, which needs root
// (inside a user namespace of its own, Codex refuses its socket directory, owned by another id).
import { afterAll, beforeAll, expect } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { codexAgent } from "../../src/worker/agents/codex";
import { credentialPath } from "../../src/worker/credential";
import { startOpenAIStandIn, type OpenAIStandIn } from "../helpers/openai-standin";
import { BWRAP } from "../helpers/bubblewrap";
import { requiring } from "../helpers/needs";
import { checkout, CODEX_BIN, recordingContext } from "./codex-helpers";

const UNSHARE = "/usr/bin/unshare";

/** Whether `unshare --mount` can hide /usr/bin/bwrap here (root, with the right to mount). */
function canHide(): boolean {
  if (!existsSync(UNSHARE) || !existsSync(BWRAP)) return false;
  const probe = Bun.spawnSync([UNSHARE, "--mount", "sh", "-c", `mount --bind /dev/null ${BWRAP} && ! test -x ${BWRAP}`], { stdout: "ignore", stderr: "ignore" });
  return probe.exitCode === 0;
}

const why = `${UNSHARE} --mount cannot hide ${BWRAP} here (it needs root, and bubblewrap installed)`;
const testHiding = requiring(canHide() ? null : { check: "unshare can hide bubblewrap", refuse: why, skip: (name) => `[codex] ${why}: skipping "${name}"; CI fails instead` }).test;

let tmp: string;
let standIn: OpenAIStandIn | undefined;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "ao-codex-shipped-"));
});
afterAll(async () => {
  await standIn?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

/** An executable that starts the real `codex` where /usr/bin/bwrap is /dev/null (a private mount). */
function codexWithoutSystemBwrap(dir: string): string {
  const wrapper = join(dir, "codex");
  const quoted = `'${CODEX_BIN.replaceAll("'", `'\\''`)}'`;
  writeFileSync(wrapper, `#!/bin/sh\nexec ${UNSHARE} --mount sh -c 'mount --bind /dev/null ${BWRAP} && exec "$0" "$@"' ${quoted} "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

testHiding("without a usable system bubblewrap, commands run in Codex's own: the checkout writable, nothing else, the credential unreadable", async () => {
  standIn = startOpenAIStandIn();
  const dataDir = join(tmp, "worker-data");
  mkdirSync(dataDir, { recursive: true });
  const credential = credentialPath(dataDir);
  writeFileSync(credential, JSON.stringify({ credential: "aow_secret_value" }), { mode: 0o600 });
  const outside = join(tmp, "outside.txt");
  standIn.push(
    { items: [{ exec: `test -x ${BWRAP} || echo hidden > hidden.txt; cat ${credential} > leaked.txt; touch inside.txt ${outside}` }] },
    { items: [{ message: "Tried." }] },
  );
  const ctx = recordingContext({ workdir: checkout(join(tmp, "work")), home: join(tmp, "codex-home"), standIn, policy: { allow: ["shell"] }, unreadable: [credential] });
  const run = codexAgent(codexWithoutSystemBwrap(tmp)).start(ctx);
  try {
    expect(await run.exited).toEqual({ code: 0, signal: null });
  } finally {
    await run.cancel(500);
  }
  // Codex found no usable system bubblewrap and said it uses its own; the command saw none either.
  expect(ctx.events.some((e) => e.type === "log" && /will use the bundled bubblewrap/.test(e.data.line))).toBe(true);
  expect(readFileSync(join(ctx.workdir, "hidden.txt"), "utf8")).toBe("hidden\n");
  expect(readFileSync(join(ctx.workdir, "leaked.txt"), "utf8")).not.toContain("aow_secret_value");
  expect(existsSync(join(ctx.workdir, "inside.txt"))).toBe(true);
  expect(existsSync(outside)).toBe(false);
  expect(standIn.toolOutput("call_exec_1_0")).toMatch(/Permission denied|No such file|Operation not permitted|Read-only file system/);
  // Outside the namespace nothing changed.
  expect(readFileSync(BWRAP).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
});
