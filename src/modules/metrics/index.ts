// GET /metrics: Prometheus text for one scraper holding AO_METRICS_TOKEN (issue 12). Outside
// /api/v1: it is the operator's endpoint, not part of the API people and programs use.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { errorAnswers } from "../../server/errors";
import { checkedByRoute, ownQueryRefusal } from "../../server/query";
import { checkScrape, registerStateGauges } from "./service";

// No query parameter (a scrape job's `params:` would be ignored otherwise), refused after the token:
// the route's 404 while AO_METRICS_TOKEN is unset, and its 401, come first.
const ScrapeQuery = checkedByRoute(t.Object({}));

export default (core: Core) => {
  registerStateGauges(core);
  const registry = core.metrics.registry;
  return new Elysia({ name: "metrics", seed: core.instanceId, tags: ["operations"] }).get(
    "/metrics",
    async ({ headers, request }) => {
      checkScrape(core, headers.authorization);
      const refused = ownQueryRefusal(request, ScrapeQuery);
      if (refused) throw refused;
      return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
    },
    {
      query: ScrapeQuery,
      response: { 200: t.String({ description: "Prometheus text exposition format" }), ...errorAnswers(400, 401, 404) },
      detail: {
        summary: "Prometheus metrics",
        description:
          "Served only with Authorization: Bearer <AO_METRICS_TOKEN>; 404 while that variable is unset, 401 for any other credential. " +
          "It takes no query parameter: one is 400 validation_failed naming it, after the token is checked. " +
          "Requests by route and status, latency, tasks by status, queue depth and age per project, workers online, offers, claims, " +
          "lost attempts, callback deliveries, database and WAL size.",
        security: [{ metricsToken: [] }],
      },
    },
  );
};
