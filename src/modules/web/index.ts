// The web app (SPEC §11): one HTML shell at each page's address, and its assets, served by the
// same binary. The pages use only the public API; they are kept out of the OpenAPI document.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { APP_PATHS, appResponse, assetResponse, contentSecurityPolicy, notFoundPage } from "../../web";
import { MAX_ARTIFACT_NAME } from "../tasks/artifacts";

// Any query: the HTML is the same whatever it is, and the browser's router reads the parameters it
// knows (org, view, status, projectId, kind, code, token; app, installation, connection, refused on
// /github) and ignores the rest, as pages do: a link carrying a tracking parameter or a cache buster
// still opens its page. An asset ignores its query likewise.
const hidden = { query: t.Object({}, { additionalProperties: true }), detail: { hide: true } };
// A path parameter is an id (the API's are at most 64 characters) or an artifact's name: anything
// longer is no page.
const param = (name: string) => t.String({ minLength: 1, maxLength: name === "name" ? MAX_ARTIFACT_NAME : 64 });

/** The code-hosting service's origin (config.github.url where the server has one), where the GitHub page posts the app manifest. */
export function codehostOrigin(config: { github?: { url?: string } }): string | null {
  const url = config.github?.url;
  if (url === undefined) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The policy of the app's pages on a server with this config. */
export function pagePolicy(config: { github?: { url?: string } }): string {
  const origin = codehostOrigin(config);
  return contentSecurityPolicy(origin ? [origin] : []);
}

export default (core: Core) => {
  const app = new Elysia({ name: "web", seed: core.instanceId });
  const csp = pagePolicy(core.config);
  for (const path of APP_PATHS) {
    const names = path.split("/").filter((p) => p.startsWith(":")).map((p) => p.slice(1));
    // `/tasks/:taskId` is the link of the callbacks' `url` (SPEC §9); the page finds the task's organization itself,
    // as `/tasks/:taskId/artifacts/:name` does (a task page's artifact link opened in a new tab).
    // Elysia's route methods add to the instance itself (the answer only carries the route's type).
    const page = ({ request }: { request: Request }) => appResponse(request, csp);
    if (names.length) app.get(path, page, { params: t.Object(Object.fromEntries(names.map((n) => [n, param(n)]))), ...hidden });
    else app.get(path, page, hidden);
  }
  return app.get(
    "/assets/:name",
    ({ params, request }) => {
      return assetResponse(params.name, request) ?? notFoundPage(request);
    },
    { params: t.Object({ name: t.String({ maxLength: 100 }) }), ...hidden },
  );
};
