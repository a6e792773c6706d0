// Schemas of the usage routes (issue 10).
import { t } from "elysia";
import { Int } from "../../server/answer-schemas";

export { ErrorBody } from "../../server/errors";

const Amounts = {
  inputTokens: Int(),
  outputTokens: Int(),
  cacheReadTokens: Int(),
  cacheWriteTokens: Int(),
  costUsd: t.Number({ description: "US dollars, as the agents reported it" }),
};

export const UsageQuery = t.Object({
  from: t.Optional(t.String({ maxLength: 40, description: "First UTC day (YYYY-MM-DD or an ISO time); default 29 days before to" })),
  to: t.Optional(t.String({ maxLength: 40, description: "Last UTC day, included (YYYY-MM-DD or an ISO time); default today" })),
});

export const ProjectUsage = t.Object({
  projectId: t.String(),
  from: t.String({ description: "YYYY-MM-DD" }),
  to: t.String({ description: "YYYY-MM-DD" }),
  totals: t.Object({ ...Amounts, tasks: Int({ description: "Tasks that used anything in the period" }) }),
  days: t.Array(t.Object({ day: t.String({ description: "YYYY-MM-DD (UTC)" }), ...Amounts }), { description: "Every day of the period, oldest first (zeros on days without usage)" }),
});

export const UsageParams = t.Object({ orgId: t.String(), projectId: t.String() });
