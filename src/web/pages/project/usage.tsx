// What the project's agents used over the last 30 days (cost and tokens per day), drawn as SVG
// bars (attributes, not styles: the CSP allows no inline style). Empty where the server has no
// usage yet.
import { api, ApiError } from "../../app/api";
import type { ProjectRecord, ProjectUsage } from "../../app/records";
import { fineUsd } from "../../../lib/money";
import { Empty, LoadFailed, Section, useResource } from "../kit";

const tokens = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n));

export function Usage({ project }: { project: ProjectRecord }) {
  const usage = useResource(
    () =>
      api<ProjectUsage>("GET", `/orgs/${project.orgId}/projects/${project.id}/usage`).catch((err) => {
        // A server without usage reporting answers 404 for the route: nothing to show yet.
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }),
    [project.id],
  );
  const u = usage.data.value;
  const days = u?.days ?? [];
  const max = Math.max(0, ...days.map((d) => d.costUsd));
  const W = 12;
  const H = 80;
  return (
    <Section id="usage" title="Usage">
      {usage.error.value && u === undefined ? <LoadFailed error={usage.error.value} retry={usage.reload} /> : null}
      {u === null || (u && u.totals.tasks === 0 && max === 0) ? (
        <Empty id="usage-empty">No usage yet. Cost and tokens appear here once agents run tasks of this project and report them.</Empty>
      ) : null}
      {u && (u.totals.tasks > 0 || max > 0) ? (
        <div class="usage">
          <dl class="facts-grid totals">
            <div>
              <dt>Cost</dt>
              <dd id="usage-cost">{fineUsd(u.totals.costUsd)}</dd>
            </div>
            <div>
              <dt>Tasks</dt>
              <dd>{u.totals.tasks}</dd>
            </div>
            <div>
              <dt>Input tokens</dt>
              <dd>{tokens(u.totals.inputTokens)}</dd>
            </div>
            <div>
              <dt>Output tokens</dt>
              <dd>{tokens(u.totals.outputTokens)}</dd>
            </div>
          </dl>
          <svg class="usage-chart" viewBox={`0 0 ${days.length * W} ${H}`} preserveAspectRatio="none" role="img" aria-label={`Cost per day from ${u.from} to ${u.to}`}>
            {days.map((d, i) => {
              const h = max > 0 ? Math.max(d.costUsd > 0 ? 2 : 0, (d.costUsd / max) * (H - 4)) : 0;
              return (
                <rect key={d.day} x={i * W + 1} y={H - h} width={W - 2} height={h} class="bar">
                  <title>
                    {d.day}: {fineUsd(d.costUsd)}, {tokens(d.inputTokens + d.outputTokens)} tokens
                  </title>
                </rect>
              );
            })}
          </svg>
          <p class="muted small">
            {u.from} – {u.to} (UTC)
          </p>
        </div>
      ) : null}
    </Section>
  );
}
