// Instance administration (administrators' sessions only; tokens are refused).
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { createUser, listUsers, userView } from "./users";
import { CreateUserBody, UserView } from "./model";
import { PageQuery, pageOfSchema } from "../orgs/model";
import { refuseUnknownFields } from "../../server/strict";
import { errorAnswers } from "../../server/errors";

export default (core: Core) =>
  new Elysia({ name: "auth-admin", seed: core.instanceId, tags: ["admin"] })
    .use(authPlugin(core))
    .post("/admin/users", async ({ body, status }) => status(201, userView(await createUser(core, body))), {
      auth: "admin",
      body: CreateUserBody,
      transform: refuseUnknownFields(CreateUserBody),
      response: { 201: UserView, ...errorAnswers(400, 401, 403, 409) },
      detail: { summary: "Create a user", description: "409 conflict when the email is taken. Add them to orgs with POST /orgs/:orgId/members." },
    })
    .get("/admin/users", ({ query }) => core.store.read(listUsers(core, query)), {
      auth: "admin",
      query: PageQuery,
      response: { 200: pageOfSchema(UserView), ...errorAnswers(400, 401, 403) },
      detail: { summary: "All users, newest first" },
    });
