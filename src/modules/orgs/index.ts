// Organizations and members (SPEC §3).
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { errorAnswers, noContentDoc, notFound } from "../../server/errors";
import { addMember, changeMemberRole, createOrg, getOrg, listMembers, listOrgsOf, orgView, removeMember, updateOrg } from "./service";
import { AddMemberBody, ChangeRoleBody, CreateOrgBody, MemberParams, MemberView, OrgParams, OrgView, PageQuery, pageOfSchema, UpdateOrgBody } from "./model";
import { refuseUnknownFields } from "../../server/strict";
import { accessChanged, forgetTokens } from "../auth/principal";

export default (core: Core) =>
  new Elysia({ name: "orgs", seed: core.instanceId, prefix: "/api/v1", tags: ["orgs"] })
    .use(authPlugin(core))
    .get(
      "/orgs",
      ({ principal, query }) =>
        core.store.read(listOrgsOf(core, principal.userId, query, principal.kind === "token" ? { orgId: principal.orgId, role: principal.role } : undefined)),
      {
        auth: "any",
        query: PageQuery,
        response: { 200: pageOfSchema(OrgView), ...errorAnswers(400, 401) },
        detail: {
          summary: "The caller's organizations with the caller's role, newest first",
          description: "A personal API token sees only its own org, with its effective role.",
        },
      },
    )
    .post("/orgs", async ({ principal, body, status }) => status(201, { ...orgView(await core.store.write(createOrg(core, body.name, principal.userId))), role: "owner" as const }), {
      auth: "session",
      body: CreateOrgBody,
      transform: refuseUnknownFields(CreateOrgBody),
      response: { 201: OrgView, ...errorAnswers(400, 401, 403) },
      detail: { summary: "Create an organization; the caller becomes its owner" },
    })
    .get(
      "/orgs/:orgId",
      async ({ orgId, role }) => {
        const org = await core.store.read(getOrg(core, orgId));
        if (!org) throw notFound("organization");
        return { ...orgView(org), role };
      },
      { permission: "member", params: OrgParams, response: { 200: OrgView, ...errorAnswers(401, 403, 404) }, detail: { summary: "Get an organization" } },
    )
    .patch("/orgs/:orgId", async ({ orgId, role, body }) => ({ ...orgView(await core.store.write(updateOrg(core, orgId, body))), role }), {
      permission: "settings.manage",
      params: OrgParams,
      body: UpdateOrgBody,
      transform: refuseUnknownFields(UpdateOrgBody),
      response: { 200: OrgView, ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "Rename, or change requireWorkerApproval" },
    })
    .get("/orgs/:orgId/members", ({ orgId, query }) => core.store.read(listMembers(core, orgId, query)), {
      permission: "member",
      params: OrgParams,
      query: PageQuery,
      response: { 200: pageOfSchema(MemberView), ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "Members, most recently joined first" },
    })
    .post(
      "/orgs/:orgId/members",
      async ({ orgId, role, body, status }) => {
        const added = await core.store.write(addMember(core, orgId, role, body));
        // Token rows join the membership: none is cached as "not a member" any more.
        forgetTokens(core);
        return status(201, added);
      },
      {
        permission: "settings.manage",
        params: OrgParams,
        body: AddMemberBody,
        transform: refuseUnknownFields(AddMemberBody),
        response: { 201: MemberView, ...errorAnswers(400, 401, 403, 404, 409) },
        detail: {
          summary: "Add an existing user by email",
          description: "404 for an unknown email, 409 when already a member, 403 when a non-owner gives the owner role.",
        },
      },
    )
    .patch(
      "/orgs/:orgId/members/:userId",
      async ({ orgId, role, params, body }) => {
        const changed = await core.store.write(changeMemberRole(core, orgId, role, params.userId, body.role));
        accessChanged(core, params.userId, "role_changed");
        return changed;
      },
      {
        permission: "settings.manage",
        params: MemberParams,
        body: ChangeRoleBody,
        transform: refuseUnknownFields(ChangeRoleBody),
        response: { 200: MemberView, ...errorAnswers(400, 401, 403, 404, 409) },
        detail: {
          summary: "Change a member's role",
          description: "Only an owner gives or takes the owner role (403); the last owner cannot be demoted (409 conflict).",
        },
      },
    )
    .delete(
      "/orgs/:orgId/members/:userId",
      async ({ orgId, role, params }) => {
        await core.store.write(removeMember(core, orgId, role, params.userId));
        accessChanged(core, params.userId, "membership_removed");
        return new Response(null, { status: 204 });
      },
      {
        permission: "settings.manage",
        params: MemberParams,
        detail: {
          summary: "Remove a member",
          description: "Only an owner removes an owner (403); the last owner cannot be removed (409 conflict).",
          responses: noContentDoc("Removed", 401, 403, 404, 409),
        },
      },
    );
