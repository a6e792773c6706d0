// Request and response schemas of organizations and members.
import { t } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { DEFAULT_PAGE_SIZE } from "./paging";
import { strictObject } from "../../server/strict";
import { Line } from "../../lib/text";

export const RoleSchema = t.Union([t.Literal("owner"), t.Literal("admin"), t.Literal("member"), t.Literal("viewer")], {
  description: "owner > admin > member > viewer",
});

/** The query of every list (SPEC §1). */
export const PageQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, default: DEFAULT_PAGE_SIZE })),
  cursor: t.Optional(t.String({ maxLength: 500 })),
});

export const pageOfSchema = <T extends TSchema>(item: T) => t.Object({ items: t.Array(item), nextCursor: t.Union([t.String(), t.Null()]) });

export const OrgName = Line(100);

export const OrgView = t.Object({
  id: t.String(),
  name: t.String(),
  requireWorkerApproval: t.Boolean(),
  role: RoleSchema,
  createdAt: t.String(),
  updatedAt: t.String(),
});

// Bodies that change who may do what are strict: an unknown field is 400, not silently dropped.
export const CreateOrgBody = strictObject({ name: OrgName });
export const UpdateOrgBody = strictObject({
  name: t.Optional(OrgName),
  requireWorkerApproval: t.Optional(t.Boolean({ description: "new workers wait for worker.approve before they get work" })),
});

export const MemberView = t.Object({
  userId: t.String(),
  email: t.String(),
  name: t.String(),
  role: RoleSchema,
  joinedAt: t.String(),
});
export const AddMemberBody = strictObject({ email: t.String({ minLength: 1, maxLength: 254 }), role: RoleSchema });
export const ChangeRoleBody = strictObject({ role: RoleSchema });
export const OrgParams = t.Object({ orgId: t.String() });
export const MemberParams = t.Object({ orgId: t.String(), userId: t.String() });
