// AI readiness (SPEC §8): run the analysis on a worker that has the project's primary repository,
// then its report: a score and the checks that passed or not.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { api, ApiError, errorText, listAll } from "../../app/api";
import type { ProjectRecord, ReadinessRun, WorkerRecord } from "../../app/records";
import { Empty, LoadFailed, Problem, Section, useResource, When } from "../kit";

/** `startable`: whether a check may be started here (any member may; not on an archived project). */
export function Readiness({ project, startable }: { project: ProjectRecord; startable: boolean }) {
  const base = `/orgs/${project.orgId}/projects/${project.id}/readiness`;
  const run = useResource(
    () =>
      api<ReadinessRun>("GET", base).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }),
    [base],
  );
  const workers = useResource(() => listAll<WorkerRecord>(`/orgs/${project.orgId}/workers`), [project.orgId]);
  const workerId = useSignal("");
  const failed = useSignal<string | null>(null);
  const current = run.data.value;
  const pending = current?.status === "queued" || current?.status === "running";
  // A run takes a while on the worker: look again every 2 s until it finishes.
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => void run.reload(), 2000);
    return () => clearTimeout(timer);
  }, [pending, current]);
  const start = async () => {
    failed.value = null;
    try {
      await api("POST", base, workerId.value ? { workerId: workerId.value } : {});
      await run.reload();
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const online = (workers.data.value ?? []).filter((w) => w.status === "online");
  const workerName = (id: string) => workers.data.value?.find((w) => w.id === id)?.name ?? id;
  return (
    <Section
      id="readiness"
      title="Readiness"
      actions={
        startable && project.repositories.length > 0 ? (
          <div class="row">
            <select aria-label="Worker to run it on" value={workerId.value} onChange={(e) => (workerId.value = e.currentTarget.value)}>
              <option value="">any online worker that has it</option>
              {online.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
            <button type="button" onClick={start} disabled={pending}>
              {pending ? "Running…" : "Run readiness check"}
            </button>
          </div>
        ) : null
      }
    >
      <Problem text={failed.value} />
      {run.error.value && current === undefined ? <LoadFailed error={run.error.value} retry={run.reload} /> : null}
      {current === null ? (
        <Empty id="readiness-empty">
          {project.repositories.length === 0
            ? "Add a repository first; the check looks at how ready it is for agents (tests, docs, instructions)."
            : "Not checked yet. Clone the repository to a worker, then run the check: it scores how ready the repository is for agents."}
        </Empty>
      ) : null}
      {current ? (
        <div class="readiness" id="readiness-report">
          <p>
            <span class={`badge ${current.status === "completed" ? "ok" : current.status === "failed" ? "bad" : ""}`}>{current.status}</span>
            {current.score !== null ? (
              <strong class="score" id="readiness-score">
                {" "}
                {current.score}/100
              </strong>
            ) : null}
            <span class="muted">
              {" "}
              on {workerName(current.workerId)}, <When at={current.finishedAt ?? current.createdAt} />
            </span>
          </p>
          {current.error ? <p class="error">{current.error}</p> : null}
          {current.checks.length ? (
            <ul class="checks">
              {current.checks.map((c) => (
                <li key={c.id} class={c.passed ? "passed" : "failed"}>
                  <span class={`badge ${c.passed ? "ok" : "bad"}`}>{c.passed ? "pass" : "fail"}</span> <strong>{c.id}</strong> <span class="muted">{c.detail}</span>
                </li>
              ))}
            </ul>
          ) : null}
          {current.report ? <pre class="report">{current.report}</pre> : null}
        </div>
      ) : null}
    </Section>
  );
}
