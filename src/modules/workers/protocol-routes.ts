// The worker protocol over HTTP (SPEC §7): pairing from the worker's side, then claim,
// transition, events and artifact uploads of the attempts it holds.
import { Elysia, t } from "elysia";
import { CloneType, type TSchema } from "@sinclair/typebox";
import type { Core } from "../../server/core";
import { storeArtifact } from "../tasks/artifacts";
import { clientIp } from "../auth/http";
import {
  ClaimRequest,
  ClaimResult,
  EventsRequest,
  EventsResult,
  LEASE_HEADER,
  PairPoll,
  PairRequest,
  PairResult,
  PairStarted,
  TransitionRequest,
  UsageReport,
  UsageResult,
} from "../../protocol/requests";
import { CloneReport, ReadinessReport, ReposReport } from "../../protocol/requests";
import { withRepositoryTokens } from "../codehost/claims";
import { appendEvents, claimTask, leaseForUpload, reportUsage, transitionTask, workerActor } from "./leases";
import { reportClone, reportRepos } from "./clones";
import { reportReadiness } from "./readiness";
import { ErrorBody, ReadinessRun, WorkerRecord, errors } from "./model";
import { pollPairing, startPairing } from "./pairing";
import { presenceOf } from "./presence";
import { workerRecord } from "./service";
import { workerAuthPlugin } from "./worker-auth";
import { ApiError } from "../../server/errors";
import { Int } from "../../server/answer-schemas";

const tags = ["worker protocol"];
const TaskParams = t.Object({ taskId: t.String({ minLength: 1, maxLength: 64 }) });

/**
 * A copy of a request schema for Elysia. When it first compiles a route (at the route's first
 * request), Elysia's normalisation sets `additionalProperties: false` on the body schema it was
 * given, in place. The worker socket (socket-requests.ts) checks the same requests with the shared
 * schemas; on a copy, what it compiles, and when, does not depend on which HTTP route ran first.
 */
const elysiasOwn = <T extends TSchema>(schema: T): T => CloneType(schema);

export default (core: Core) =>
  new Elysia({ name: "workers-protocol", seed: core.instanceId })
    .use(workerAuthPlugin(core))
    .post("/worker/pair", (ctx) => core.store.write(startPairing(core, ctx.body, clientIp(ctx))), {
      body: PairRequest,
      response: { 200: PairStarted, 400: ErrorBody, 429: ErrorBody },
      detail: {
        summary: "Start pairing a worker (worker side)",
        security: [],
        description:
          "A person approves userCode at verificationUriComplete; the worker polls /worker/pair/poll every intervalSec. Codes live 600 s. 429 (Retry-After) past 20 undecided pairings from one address or 1,000 in all.",
        tags,
      },
    })
    .post("/worker/pair/poll", async ({ body }) => {
      const outcome = await core.store.write(pollPairing(core, body.deviceCode));
      if (outcome instanceof ApiError) throw outcome;
      // The new worker shows at once on its org's open workers pages, as a change to one does.
      await presenceOf(core).publish(outcome.orgId, outcome.workerId);
      return outcome;
    }, {
      body: PairPoll,
      response: { 200: PairResult, 400: ErrorBody },
      detail: {
        summary: "Poll a pairing (worker side)",
        security: [],
        description:
          "400 authorization_pending | slow_down | access_denied | expired_token, as device sign-in; 200 {credential: aow_..., workerId, orgId} once.",
        tags,
      },
    })
    .get("/worker/me", ({ worker }) => core.store.read(workerRecord(core, worker)), {
      worker: true,
      response: { 200: WorkerRecord, 401: ErrorBody },
      detail: { summary: "The calling worker's own record", tags },
    })
    .post("/worker/tasks/:taskId/claim", async ({ worker, params, body }) => withRepositoryTokens(core, worker.org_id, await claimTask(core, worker, params.taskId, body.offerId)), {
      worker: true,
      params: TaskParams,
      body: elysiasOwn(ClaimRequest),
      response: { 200: ClaimResult, ...errors, 409: ErrorBody },
      detail: {
        summary: "Claim an offered task",
        description:
          "Atomic: the task becomes running with attempt + 1 and a new lease, or 409 (offer expired, taken, or not this worker's). Repositories of a GitHub app installation carry a token minted for this attempt and that repository alone, and push when the project opens pull requests.",
        tags,
      },
    })
    .post("/worker/tasks/:taskId/transition", ({ worker, params, body }) => transitionTask(core, worker, params.taskId, body), {
      worker: true,
      params: TaskParams,
      body: elysiasOwn(TransitionRequest),
      response: { 200: t.Object({ status: t.String(), attempt: Int() }), ...errors, 409: ErrorBody },
      detail: {
        summary: "Report where the attempt went",
        description: "Through the worker transitions of the state machine. 409 conflict (details.reason stale_lease) for another attempt's lease.",
        tags,
      },
    })
    .post("/worker/tasks/:taskId/events", ({ worker, params, body }) => appendEvents(core, worker, params.taskId, body), {
      worker: true,
      params: TaskParams,
      body: elysiasOwn(EventsRequest),
      response: { 200: EventsResult, ...errors, 409: ErrorBody },
      detail: { summary: "Append timeline events of the attempt", description: "Idempotent per (attempt, seq): resent events are skipped.", tags },
    })
    .post("/worker/tasks/:taskId/usage", ({ worker, params, body }) => reportUsage(core, worker, params.taskId, body), {
      worker: true,
      params: TaskParams,
      body: UsageReport,
      response: { 200: UsageResult, ...errors, 409: ErrorBody },
      detail: {
        summary: "Report the attempt's usage so far (cumulative)",
        description:
          "Tokens and cost as the agent reports them, cumulative over the attempt: the server records the growth since the last report (a resend adds nothing). " +
          "Workers send one at most every 2 s and a last one before the attempt's final transition. 409 for another attempt's lease or an ended attempt.",
        tags,
      },
    })
    .put(
      "/worker/tasks/:taskId/artifacts/:name",
      async ({ worker, params, request, headers, status }) => {
        const row = await leaseForUpload(core, worker, params.taskId, headers[LEASE_HEADER] ?? null);
        const body = request.body ?? new Uint8Array(0);
        const stored = await storeArtifact(core, worker.org_id, params.taskId, params.name, body, row.attempt, workerActor(worker));
        return status(201, { name: stored.name, contentType: stored.contentType, size: stored.size, createdAt: stored.createdAt });
      },
      {
        worker: true,
        parse: "none",
        params: t.Object({ taskId: t.String({ minLength: 1, maxLength: 64 }), name: t.String({ minLength: 1, maxLength: 200 }) }),
        response: {
          201: t.Object({ name: t.String(), contentType: t.String(), size: Int(), createdAt: t.String() }),
          ...errors,
          409: ErrorBody,
          413: ErrorBody,
          507: ErrorBody,
        },
        detail: {
          summary: "Upload an artifact (raw body)",
          description: `The lease goes in the ${LEASE_HEADER} header. Names: letters, digits and . _ + - (no paths). 413 past the artifact limit; 507 insufficient_storage when the server's disk cannot hold it (nothing is stored).`,
          tags,
        },
      },
    )
    .post("/worker/repos", ({ worker, body }) => core.store.write(reportRepos(core, worker, body)), {
      worker: true,
      body: ReposReport,
      response: { 200: t.Object({ known: Int(), discovered: Int() }), 400: ErrorBody, 401: ErrorBody },
      detail: { summary: "Report the git repositories in the workspace (the full list)", tags },
    })
    .post("/worker/clones/:repositoryId", ({ worker, params, body }) => core.store.write(reportClone(core, worker, params.repositoryId, body)), {
      worker: true,
      params: t.Object({ repositoryId: t.String({ minLength: 1, maxLength: 64 }) }),
      body: CloneReport,
      response: { 200: t.Object({ status: t.String() }), ...errors },
      detail: { summary: "Report the result of a clone", tags },
    })
    .post("/worker/readiness/:runId", ({ worker, params, body }) => core.store.write(reportReadiness(core, worker, params.runId, body)), {
      worker: true,
      params: t.Object({ runId: t.String({ minLength: 1, maxLength: 64 }) }),
      body: ReadinessReport,
      response: { 200: ReadinessRun, ...errors, 409: ErrorBody },
      detail: { summary: "Report progress or the result of a readiness run", description: "409 once the run has finished (completed or failed).", tags },
    });
