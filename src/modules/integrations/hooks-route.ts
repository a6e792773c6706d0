// POST /api/v1/hooks/:id: inbound deliveries. The route reads its raw body itself (the app's JSON
// parser skips it) so the signature is checked over the exact bytes before anything is parsed.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { ErrorBody, payloadTooLarge } from "../../server/errors";
import { checkedByRoute, ownQueryRefusal } from "../../server/query";
import { receiveDelivery } from "./inbound";
import { HookAnswer } from "./model";

/** The body's bytes, refused with 413 past the limit without reading the rest. */
async function readRawBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) throw payloadTooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

// No query parameter, refused after the signature (the credential here), not before it as elsewhere.
const HookQuery = checkedByRoute(t.Object({}));

export const hooksRoute = (core: Core) =>
  new Elysia({ name: "integrations-hooks", seed: core.instanceId, prefix: "/api/v1" }).post(
    "/hooks/:id",
    async ({ params, request, body, status }) => {
      const result = await receiveDelivery(core, params.id, request.headers, body as Uint8Array, ownQueryRefusal(request, HookQuery));
      return status(result.status, result.body);
    },
    {
      parse: ({ request }) => readRawBody(request, core.config.jsonLimitBytes),
      params: t.Object({ id: t.String() }),
      query: HookQuery,
      response: { 200: HookAnswer, 201: HookAnswer, 400: ErrorBody, 401: ErrorBody, 413: ErrorBody },
      detail: {
        summary: "Inbound delivery for integration :id",
        tags: ["integrations"],
        security: [],
        description: [
          "Authenticated by the integration's secret, checked over the raw body before it is parsed:",
          "github `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>` (events ping, issues labeled, issue_comment created, pull_request labeled; `X-GitHub-Delivery` dedupes);",
          "gitlab `X-Gitlab-Token: <secret>` (Issue, Note and Merge Request hooks; `Idempotency-Key` or `X-Gitlab-Event-UUID` dedupes);",
          "signed_json `X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>` within 300 s, optional `X-Svc-Delivery`,",
          "body `{title, prompt, priority?, kind?, review?, ref?}`.",
          "Answers: 201 `{status: created, taskId}`; 200 `{status: duplicate, taskId}` (same delivery id, the same signed_json signature whatever its delivery id, or the same issue, pull/merge request or comment already made a task);",
          "200 `{status: ignored, reason}`; 200 `{status: pong}`; 401 bad signature (also for an unknown id); 400 not UTF-8, not JSON or invalid; 413 over 1 MiB.",
        ].join(" "),
      },
    },
  );
