// A child process for end-to-end tests whose stdout and stderr are kept as one text, with
// waitFor() a line in it: the base of `ao worker` from source (worker-helpers.ts) and of the built
// executable's `ao serve` and `ao worker` (cluster-helpers.ts).

export class OutputProcess {
  output = "";
  readonly proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  readonly exited: Promise<number>;
  private waiters: { re: RegExp; from: number; resolve: (m: RegExpMatchArray) => void }[] = [];

  constructor(cmd: string[], options: { cwd?: string; env: Record<string, string | undefined> }) {
    this.proc = Bun.spawn(cmd, { cwd: options.cwd, env: options.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    void this.pump(this.proc.stdout);
    void this.pump(this.proc.stderr);
    this.exited = this.proc.exited;
    // Whoever waits hears at once that the process has gone, not at the deadline.
    void this.exited.then(() => this.check());
  }

  private async pump(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      this.output += decoder.decode(chunk, { stream: true });
      this.check();
    }
  }

  private check() {
    for (const w of [...this.waiters]) {
      const m = this.output.slice(w.from).match(w.re);
      if (m) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  }

  /** Waits for the output (from offset `from` on) to match. */
  waitFor(re: RegExp, ms = 15_000, from = 0): Promise<RegExpMatchArray> {
    const m = this.output.slice(from).match(re);
    if (m) return Promise.resolve(m);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`output did not match ${re} within ${ms} ms (exit ${this.proc.exitCode}):\n${this.output.slice(-4000)}`));
      }, ms);
      const done = (m: RegExpMatchArray) => (clearTimeout(timer), resolve(m));
      this.waiters.push({ re, from, resolve: done });
    });
  }

  /** SIGTERM, then SIGKILL when it has not ended within 5 s. */
  async stop() {
    if (this.proc.exitCode === null && !this.proc.killed) this.proc.kill("SIGTERM");
    await Promise.race([this.exited, Bun.sleep(5000)]);
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
    await this.exited;
  }
}
