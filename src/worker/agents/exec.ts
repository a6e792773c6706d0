// The exec adapter (SPEC §7): runs a shell command in the task's checkout. stdout lines become log
// events, except the ::ao:: directives; the person's answers arrive on stdin, one line each.
import { spawnGroup } from "../process";
import type { Agent, AgentContext, AgentRun } from "./types";

const DIRECTIVE = /^::ao::(summary|needs-input|needs-approval)(?:\s+(.*))?$/;

/** Applies one stdout line of an exec agent to the context. Exported for the parser tests. */
export function handleExecLine(ctx: Pick<AgentContext, "emit" | "summary" | "ask">, line: string) {
  const m = DIRECTIVE.exec(line);
  if (!m) return ctx.emit("log", { stream: "stdout", line });
  const text = (m[2] ?? "").trim();
  if (m[1] === "summary") ctx.summary(text);
  else ctx.ask(m[1] === "needs-input" ? "input" : "approval", text || (m[1] === "needs-input" ? "input needed" : "approval needed"));
}

export function execAgent(command: string): Agent {
  return {
    name: "exec",
    start(ctx: AgentContext): AgentRun {
      const proc = spawnGroup("/bin/sh", ["-c", command], {
        cwd: ctx.workdir,
        env: ctx.env,
        onStdout: (line) => handleExecLine(ctx, line),
        onStderr: (line) => ctx.emit("log", { stream: "stderr", line }),
      });
      return {
        pid: proc.pid,
        exited: proc.exited,
        pause: () => proc.signal("SIGSTOP"),
        resume: () => proc.signal("SIGCONT"),
        cancel: (graceMs) => proc.terminate(graceMs),
        answer: (line) => proc.write(line),
      };
    },
  };
}
