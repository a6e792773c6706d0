// Request and response schemas of sign-in, device sign-in, the caller's account and admin.
import { t } from "elysia";
import { RoleSchema } from "../orgs/model";
import { strictObject } from "../../server/strict";
import { Line } from "../../lib/text";
import { Int } from "../../server/answer-schemas";

export const Email = t.String({ format: "email", maxLength: 254, description: "compared case-insensitively" });
/** At least 8 characters; the upper bound keeps hashing cheap to refuse. */
export const Password = t.String({ minLength: 8, maxLength: 1024 });

export const UserView = t.Object({
  id: t.String(),
  email: t.String(),
  name: t.String(),
  isAdmin: t.Boolean(),
  twoFactorEnabled: t.Boolean(),
  createdAt: t.String({ format: "date-time" }),
});

export const LoginBody = t.Object({
  email: t.String({ minLength: 1, maxLength: 254 }),
  password: t.String({ minLength: 1, maxLength: 1024 }),
  code: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "TOTP code or a recovery code, for accounts with two-factor" })),
});

export const TokenPair = t.Object({
  accessToken: t.String(),
  expiresIn: Int({ description: "Seconds the access token lasts: 900" }),
  refreshToken: t.Optional(t.String({ description: "absent with x-client: web (then set as the ao_refresh cookie)" })),
  user: UserView,
});

export const RefreshBody = t.Object({
  refreshToken: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "absent with x-client: web: the ao_refresh cookie is used" })),
});

export const ClientHeaders = t.Object({ "x-client": t.Optional(t.String()) });

export const DeviceStartBody = t.Object({ clientName: t.Optional(Line(100)) });
export const DeviceStart = t.Object({
  deviceCode: t.String(),
  userCode: t.String({ description: "XXXX-XXXX from BCDFGHJKLMNPQRSTVWXZ; matched case- and dash-insensitively" }),
  verificationUri: t.String(),
  verificationUriComplete: t.String(),
  expiresIn: Int(),
  intervalSec: Int(),
});
export const DevicePollBody = t.Object({ deviceCode: t.String({ minLength: 1, maxLength: 200 }) });
export const UserCodeBody = t.Object({ userCode: t.String({ minLength: 1, maxLength: 20 }) });
export const DeviceGrantView = t.Object({
  userCode: t.String(),
  status: t.String(),
  clientName: t.Union([t.String(), t.Null()]),
  requestIp: t.Union([t.String(), t.Null()]),
  createdAt: t.String(),
  expiresAt: t.String(),
});

export const Me = t.Composite([
  UserView,
  t.Object({
    via: t.Union([
      t.Object({ type: t.Literal("session"), sessionId: t.String() }),
      t.Object({ type: t.Literal("token"), tokenId: t.String(), orgId: t.String(), role: t.Union([RoleSchema, t.Null()]) }),
    ]),
  }),
]);

// A dropped "roles" or "expiresIn" would make a token with its owner's full role or no expiry: strict.
export const CreateTokenBody = strictObject({
  name: Line(100),
  orgId: t.String({ minLength: 1, maxLength: 64 }),
  role: t.Optional(RoleSchema),
  expiresAt: t.Optional(t.String({ format: "date-time" })),
});
export const CreatedToken = t.Object({
  id: t.String(),
  name: t.String(),
  orgId: t.String(),
  role: RoleSchema,
  token: t.String({ description: "shown once" }),
  expiresAt: t.Union([t.String(), t.Null()]),
  createdAt: t.String(),
});
export const TokenView = t.Object({
  id: t.String(),
  name: t.String(),
  orgId: t.String(),
  role: RoleSchema,
  lastFour: t.String(),
  expiresAt: t.Union([t.String(), t.Null()]),
  lastUsedAt: t.Union([t.String(), t.Null()]),
  createdAt: t.String(),
});

export const CodeBody = t.Object({ code: t.String({ minLength: 1, maxLength: 64 }) });
export const TwoFactorSetup = t.Object({ secret: t.String(), otpauthUrl: t.String() });
export const RecoveryCodes = t.Object({ recoveryCodes: t.Array(t.String()) });

export const SetupBody = strictObject({
  token: t.String({ minLength: 1, maxLength: 200 }),
  email: Email,
  password: Password,
  name: t.Optional(t.String({ maxLength: 100 })),
  orgName: t.Optional(Line(100)),
});
export const SetupState = t.Object({ required: t.Boolean() });

export const CreateUserBody = strictObject({
  email: Email,
  password: Password,
  name: t.Optional(t.String({ maxLength: 100 })),
  isAdmin: t.Optional(t.Boolean({ description: "make the user an instance administrator" })),
});

export const RenameBody = strictObject({ name: Line(100, { description: "The caller's display name" }) });
export const SessionView = t.Object({
  id: t.String(),
  client: t.String({ description: "web, cli or device" }),
  current: t.Boolean({ description: "true for the session making this request" }),
  createdAt: t.String(),
  lastUsedAt: t.String(),
});
