// The confinement of agents without a sandbox of their own (src/worker/confine.ts), with the real
// bubblewrap (Debian's; .ci/run installs it, test/helpers/bubblewrap.ts): a confined command cannot read or overwrite the
// worker's credential, by its path or through a link, and sees everything else as it is.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { confinementFor, unconfined, type Command } from "../../src/worker/confine";
import { describeWithBwrap, NESTING_REFUSED, oneLevelBwrap } from "../helpers/bubblewrap";

let tmp: string;
let credential: string;
const SECRET = "aow_confine_test_secret";

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "ao-confine-"));
  mkdirSync(join(tmp, "data"));
  credential = join(tmp, "data", "credential.json");
  writeFileSync(credential, JSON.stringify({ credential: SECRET }), { mode: 0o600 });
  writeFileSync(join(tmp, "data", "beside.txt"), "readable");
  symlinkSync(join(tmp, "data"), join(tmp, "linked"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs a shell line as the confinement starts it; its exit code and output. */
function sh(c: (x: Command) => Command, line: string) {
  const { command, args } = c({ command: "/bin/sh", args: ["-c", line] });
  const r = Bun.spawnSync([command, ...args], { cwd: tmp, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describeWithBwrap("with bubblewrap", () => {
  test("the credential cannot be read, by its path or through a link; the files beside it can", () => {
    const c = confinementFor([credential]);
    const confine = c.confineIn(tmp);
    expect(c.status).toBe("agent commands run in bubblewrap, without the worker's credential");
    const byPath = sh(confine, `cat ${credential}`);
    expect(byPath.code).not.toBe(0);
    expect(byPath.err).toContain("Permission denied");
    expect(byPath.out).not.toContain(SECRET);
    const byLink = sh(confine, `cat ${join(tmp, "linked", "credential.json")}; cp ${credential} ${join(tmp, "copy.json")}`);
    expect(byLink.out + byLink.err).not.toContain(SECRET);
    expect(() => readFileSync(join(tmp, "copy.json"), "utf8")).toThrow();
    expect(sh(confine, `cat ${join(tmp, "linked", "beside.txt")}`)).toMatchObject({ code: 0, out: "readable" });
    // Unconfined, the same command reads it: what the confinement is for.
    expect(sh(unconfined, `cat ${join(tmp, "linked", "credential.json")}`).out).toContain(SECRET);
  });

  test("nor overwritten, moved or removed; the rest of the file system is writable as before; exit codes pass through", () => {
    const confine = confinementFor([credential]).confineIn(tmp);
    const r = sh(confine, `echo x > ${credential}; mv ${credential} ${join(tmp, "moved.json")}; rm -f ${credential}; echo done > ${join(tmp, "written.txt")}; exit 7`);
    expect(r.code).toBe(7);
    expect(JSON.parse(readFileSync(credential, "utf8"))).toEqual({ credential: SECRET });
    expect(readFileSync(join(tmp, "written.txt"), "utf8")).toBe("done\n");
  });

  test("a program that is not there is left as it is, to fail with the system's reason", () => {
    const confine = confinementFor([credential]).confineIn(tmp);
    expect(confine({ command: join(tmp, "no-such-agent"), args: ["x"] })).toEqual({ command: join(tmp, "no-such-agent"), args: ["x"] });
    expect(confine({ command: "/bin/sh", args: [] }).command).toBe(Bun.which("bwrap")!);
  });

  test("an attempt's commands see its own directory of the hidden one and no other, by any path; writes there stay", () => {
    const runs = join(tmp, "data", "runs");
    for (const dir of ["t1-a1", "t2-a1", "kept/t3"]) {
      mkdirSync(join(runs, dir, "work"), { recursive: true });
      writeFileSync(join(runs, dir, "work", "code.txt"), `code of ${dir}\n`);
    }
    const c = confinementFor([credential], { hidden: join(tmp, "linked", "runs") });
    expect(c.status).toBe("agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
    const own = join(runs, "t1-a1");
    const r = sh(c.confineIn(own), `cd ${join(own, "work")} && cat code.txt && echo made > made.txt; ls ${runs}; cat ${join(runs, "t2-a1", "work", "code.txt")} ${join(tmp, "linked", "runs", "kept", "t3", "work", "code.txt")}; cat ${credential}`);
    expect(r.out).toContain("code of t1-a1");
    expect(r.out.split("\n")).toContain("t1-a1");
    expect(r.out).not.toContain("t2-a1");
    expect(r.out).not.toContain("kept");
    expect(r.out).not.toContain("code of t2-a1");
    expect(r.out).not.toContain("code of kept/t3");
    expect(r.err).toContain("No such file or directory");
    expect(r.out).not.toContain(SECRET);
    expect(readFileSync(join(own, "work", "made.txt"), "utf8")).toBe("made\n");
    // Another attempt's commands see that one alone; unconfined, the same command reads the others' code.
    expect(sh(c.confineIn(join(runs, "t2-a1")), `ls ${runs}`).out).toBe("t2-a1\n");
    expect(sh(unconfined, `cat ${join(runs, "t2-a1", "work", "code.txt")}`).out).toBe("code of t2-a1\n");
    // The hidden directory outside the command is as it was.
    expect(readFileSync(join(runs, "kept", "t3", "work", "code.txt"), "utf8")).toBe("code of kept/t3\n");
  });

  test("a bubblewrap runs inside it (Codex's sandbox does); where one cannot, the reason, asked once", () => {
    expect(confinementFor([credential], { hidden: join(tmp, "data") }).nestingRefused()).toBeNull();
    // Runs the real one, but not inside itself (as where one level of user namespaces is allowed).
    const oneLevel = oneLevelBwrap(join(tmp, "bwrap-one-level"));
    const c = confinementFor([credential], { bwrap: oneLevel });
    expect(c.status).toBe("agent commands run in bubblewrap, without the worker's credential");
    expect(c.nestingRefused()).toBe(NESTING_REFUSED);
    rmSync(oneLevel);
    expect(c.nestingRefused()).toBe(NESTING_REFUSED);
  });

  test("named through a linked directory, the credential is covered by its real path", () => {
    const confine = confinementFor([join(tmp, "linked", "credential.json")]).confineIn(tmp);
    const r = sh(confine, `cat ${credential}; cat ${join(tmp, "linked", "credential.json")}`);
    expect(r.out).not.toContain(SECRET);
    expect(r.err).toContain("Permission denied");
  });
});

describe("without a bubblewrap that runs", () => {
  test("none installed: commands run as they are, and the status says why", () => {
    const c = confinementFor([credential], { bwrap: null });
    expect(c.status).toBe("agent commands can read the worker's credential and other tasks' checkouts: bubblewrap (bwrap) is not installed");
    expect(c.confineIn(join(tmp, "runs", "t1-a1"))({ command: "/bin/sh", args: ["-c", "true"] })).toEqual({ command: "/bin/sh", args: ["-c", "true"] });
  });

  test("one that cannot run here (no user namespaces, say): its first line of error in the status", () => {
    const fake = join(tmp, "bwrap-refuses");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n");
    chmodSync(fake, 0o755);
    const c = confinementFor([credential], { bwrap: fake });
    expect(c.status).toBe("agent commands can read the worker's credential and other tasks' checkouts: bubblewrap cannot run here (bwrap: No permissions to create a new namespace)");
    expect(sh(c.confineIn(tmp), `cat ${credential}`).out).toContain(SECRET);
    expect(c.confineIn(join(tmp, "runs", "t1-a1"))).toBe(unconfined);
    expect(c.nestingRefused()).toBeNull();
  });
});
