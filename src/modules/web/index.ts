// The web app (SPEC §11): one HTML shell at each page's address, and its assets, served by the
// same binary. The pages use only the public API; they are kept out of the OpenAPI document.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { APP_PATHS, appResponse, assetResponse, notFoundPage } from "../../web";

const hidden = { detail: { hide: true } };
// A path parameter is an id: anything longer is no page (the API's ids are at most 64 characters).
const param = t.String({ minLength: 1, maxLength: 64 });

export default (core: Core) => {
  const app = new Elysia({ name: "web", seed: core.instanceId });
  for (const path of APP_PATHS) {
    const names = path.split("/").filter((p) => p.startsWith(":")).map((p) => p.slice(1));
    // `/tasks/:taskId` is the link of the callbacks' `url` (SPEC §9); the page finds the task's organization itself.
    // Elysia's route methods add to the instance itself (the answer only carries the route's type).
    app.get(path, ({ request }) => appResponse(request), names.length ? { params: t.Object(Object.fromEntries(names.map((n) => [n, param]))), ...hidden } : hidden);
  }
  return app.get(
    "/assets/:name",
    ({ params, request }) => {
      return assetResponse(params.name, request) ?? notFoundPage(request);
    },
    { params: t.Object({ name: t.String({ maxLength: 100 }) }), ...hidden },
  );
};
