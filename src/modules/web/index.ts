// The web app (SPEC §11): its pages and their assets, served by the same binary. The pages use
// only the public API; they are kept out of the OpenAPI document.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { assetResponse, notFoundPage, pageResponse } from "../../web";

const hidden = { detail: { hide: true } };

export default (core: Core) =>
  new Elysia({ name: "web", seed: core.instanceId })
    .get("/", ({ request }) => pageResponse("index", request), hidden)
    .get("/setup", ({ request }) => pageResponse("setup", request), hidden)
    .get("/device", ({ request }) => pageResponse("device", request), hidden)
    .get("/pair", ({ request }) => pageResponse("pair", request), hidden)
    .get("/tasks", ({ request }) => pageResponse("tasks", request), hidden)
    // The link of the callbacks' `url` (SPEC §9); the page finds the task's organization itself.
    .get("/tasks/:taskId", ({ request }) => pageResponse("task", request), {
      params: t.Object({ taskId: t.String({ minLength: 1, maxLength: 64 }) }),
      ...hidden,
    })
    .get(
      "/assets/:name",
      ({ params, request }) => {
        return assetResponse(params.name, request) ?? notFoundPage(request);
      },
      { params: t.Object({ name: t.String({ maxLength: 100 }) }), ...hidden },
    );
