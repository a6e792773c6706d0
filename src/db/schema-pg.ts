// The PostgreSQL schema, derived at load from the SQLite one (db/schema): one source of truth.
// It mirrors SQLite's storage, not drizzle's modes, so the same SQL and the same parameters run
// on both stores: integers (numbers, ms timestamps, 0/1 flags) are bigint, text (JSON too) is
// text compared bytewise (COLLATE "C", as SQLite compares, whatever the database's locale).
// drizzle-kit reads it to write migrations/pg (drizzle.pg.config.ts); the services keep using the
// SQLite tables to build queries.
import { getTableColumns, is, SQL } from "drizzle-orm";
import { getTableConfig, SQLiteTable, type SQLiteColumn } from "drizzle-orm/sqlite-core";
import {
  bigint,
  customType,
  doublePrecision,
  foreignKey,
  index,
  pgTable,
  primaryKey,
  unique,
  uniqueIndex,
  type PgColumn,
  type PgColumnBuilderBase,
  type PgTableWithColumns,
} from "drizzle-orm/pg-core";
import * as sqlite from "./schema";

const textC = customType<{ data: string; driverData: string }>({ dataType: () => 'text COLLATE "C"' });
const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea" });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type PgMirror = PgTableWithColumns<any>;

const mirrors = new Map<string, PgMirror>();

function columnBuilder(table: string, column: SQLiteColumn): PgColumnBuilderBase {
  const where = `${table}.${column.name}`;
  // Nothing of these would reach the PostgreSQL schema: refuse rather than drift apart.
  if (column.defaultFn || column.onUpdateFn || column.generated) throw new Error(`schema-pg: ${where} has a runtime default or generated value, which the mirror does not carry`);
  const type = column.getSQLType();
  // Each builder is typed as its own class; only the shared chainable calls below are used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let b: any;
  if (type === "integer") b = bigint(column.name, { mode: "number" });
  else if (type === "text") b = textC(column.name);
  else if (type === "real") b = doublePrecision(column.name);
  else if (type === "blob") b = bytea(column.name);
  else throw new Error(`schema-pg: ${where} is of type ${type}, which has no mirror`);
  if ((column as { autoIncrement?: boolean }).autoIncrement) b = b.generatedByDefaultAsIdentity();
  if (column.primary) b = b.primaryKey();
  if (column.notNull) b = b.notNull();
  // A default as stored: JSON text for a json column, 0/1 for a flag.
  if (column.hasDefault && column.default !== undefined) b = b.default(is(column.default, SQL) ? column.default : column.mapToDriverValue(column.default));
  if (column.isUnique) b = b.unique(column.uniqueName);
  return b as PgColumnBuilderBase;
}

/** The PostgreSQL table of a SQLite table: same table, column, key, index and constraint names. */
function mirror(table: SQLiteTable): PgMirror {
  const config = getTableConfig(table);
  if (config.checks.length) throw new Error(`schema-pg: ${config.name} has check constraints, which the mirror does not carry`);
  const keys = new Map<string, string>();
  const builders: Record<string, PgColumnBuilderBase> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    keys.set(column.name, key);
    builders[key] = columnBuilder(config.name, column as SQLiteColumn);
  }
  // Runs when drizzle-kit (or getTableConfig) asks, once every mirror exists: foreign keys may point anywhere.
  const pg: PgMirror = pgTable(config.name, builders, (t) => {
    const own = (columns: { name: string }[]) => columns.map((c) => t[keys.get(c.name)!]) as unknown as [PgColumn, ...PgColumn[]];
    return [
      ...config.primaryKeys.map((pk) => primaryKey({ name: pk.getName(), columns: own(pk.columns) })),
      ...config.uniqueConstraints.map((u) => unique(u.getName()).on(...own(u.columns))),
      ...config.indexes.map((ix) => {
        const on = (ix.config.unique ? uniqueIndex : index)(ix.config.name).on(...own(ix.config.columns as SQLiteColumn[]));
        return ix.config.where ? on.where(ix.config.where) : on;
      }),
      ...config.foreignKeys.map((fk) => {
        const ref = fk.reference();
        const target = mirrors.get(getTableConfig(ref.foreignTable).name)!;
        const targetKeys = getTableColumns(ref.foreignTable);
        const foreignColumns = ref.foreignColumns.map((c) => target[Object.keys(targetKeys).find((k) => targetKeys[k].name === c.name)!]);
        let built = foreignKey({ name: fk.getName(), columns: own(ref.columns), foreignColumns: foreignColumns as [PgColumn, ...PgColumn[]] });
        if (fk.onDelete) built = built.onDelete(fk.onDelete);
        if (fk.onUpdate) built = built.onUpdate(fk.onUpdate);
        return built;
      }),
    ];
  });
  return pg;
}

for (const value of Object.values(sqlite)) {
  if (is(value, SQLiteTable)) mirrors.set(getTableConfig(value).name, mirror(value));
}

/** Every mirrored table by its SQL name. */
export const pgTables: ReadonlyMap<string, PgMirror> = mirrors;

const t = (name: string) => mirrors.get(name)!;

// drizzle-kit finds tables among a module's exports only; test/db/postgres.test.ts checks that
// the migrations make every table SQLite's make.
export const users = t("users");
export const recoveryCodes = t("recovery_codes");
export const orgs = t("orgs");
export const memberships = t("memberships");
export const sessions = t("sessions");
export const refreshTokens = t("refresh_tokens");
export const deviceGrants = t("device_grants");
export const apiTokens = t("api_tokens");
export const setupTokens = t("setup_tokens");
export const projects = t("projects");
export const repositories = t("repositories");
export const tasks = t("tasks");
export const taskEvents = t("task_events");
export const artifacts = t("artifacts");
export const artifactBodies = t("artifact_bodies");
export const artifactChunks = t("artifact_chunks");
export const taskUsage = t("task_usage");
export const workers = t("workers");
export const workerMail = t("worker_mail");
export const workerRepositories = t("worker_repositories");
export const discoveredRepositories = t("discovered_repositories");
export const readinessRuns = t("readiness_runs");
export const integrations = t("integrations");
export const inboundKeys = t("inbound_keys");
export const plugins = t("plugins");
export const deliveries = t("deliveries");
export const deliveryTries = t("delivery_tries");
export const codehostApps = t("codehost_apps");
export const codehostStates = t("codehost_states");
export const codehostInstallations = t("codehost_installations");
export const codehostRepositories = t("codehost_repositories");
export const codehostConnections = t("codehost_connections");
export const codehostJobs = t("codehost_jobs");
