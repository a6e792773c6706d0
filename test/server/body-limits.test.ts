// Request bodies are refused from their method, path and headers before a byte of them is read:
// each scenario declares a body the test never sends, so an answer proves the server did not wait for it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { rawHttp } from "../helpers/raw-http";

const MiB = 1024 * 1024;
let s: TestServer;
let owner: Session;
beforeAll(async () => {
  // A small artifact limit: Bun's own refusal used to start 1 MiB past it, with an empty body.
  s = await startTestServer({ artifactLimitBytes: 2 * MiB });
  owner = await createAdmin(s);
});
afterAll(() => s.stop());

const send = (head: string, body?: string) => rawHttp(s.server.port!, `${head}\nHost: 127.0.0.1\nConnection: close`, { body });

describe("bodies refused unread, with or without credentials", () => {
  const rows: [string, string, number, string][] = [
    ["48 MiB to login with an artifact path in the query", `POST /api/v1/auth/login?x=/api/v1/worker/tasks/a/artifacts/ HTTP/1.1\nContent-Type: application/json\nContent-Length: ${48 * MiB}`, 413, "payload_too_large"],
    ["48 MiB to login with an artifact path in the query, as PUT", `PUT /api/v1/auth/login?x=/api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nContent-Type: application/json\nContent-Length: ${48 * MiB}`, 413, "payload_too_large"],
    ["a POST to the artifact path (the upload is a PUT)", `POST /api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nContent-Type: application/json\nContent-Length: ${48 * MiB}`, 413, "payload_too_large"],
    ["a chunked text/plain body", "POST /api/v1/auth/login HTTP/1.1\nContent-Type: text/plain\nTransfer-Encoding: chunked", 411, "length_required"],
    ["a chunked form body", "POST /api/v1/auth/login HTTP/1.1\nContent-Type: application/x-www-form-urlencoded\nTransfer-Encoding: chunked", 411, "length_required"],
    ["a chunked body with no type", "POST /api/v1/auth/device/start HTTP/1.1\nTransfer-Encoding: chunked", 411, "length_required"],
    ["an artifact over its limit (Bun's own 413 had an empty body)", `PUT /api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nContent-Type: application/octet-stream\nContent-Length: ${64 * MiB}`, 413, "payload_too_large"],
    ["an artifact just over its limit", `PUT /api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nContent-Length: ${2 * MiB + 1}`, 413, "payload_too_large"],
    ["an inbound hook over 1 MiB", `POST /api/v1/hooks/int_x HTTP/1.1\nContent-Type: application/json\nContent-Length: ${MiB + 1}`, 413, "payload_too_large"],
  ];
  test.each(rows)("%s; the connection is closed, the body never read", async (_name, head, status, code) => {
    const r = await rawHttp(s.server.port!, `${head}\nHost: 127.0.0.1`, { untilClose: true });
    expect(r.closed).toBe(true);
    expect(r.status).toBe(status);
    expect(r.headers["content-type"]).toStartWith("application/json");
    expect(JSON.parse(r.body).error.code).toBe(code);
  });

  const typed: [string, string][] = [
    ["text/plain", "Content-Type: text/plain"],
    ["a form", "Content-Type: application/x-www-form-urlencoded"],
    ["multipart", "Content-Type: multipart/form-data; boundary=x"],
    ["a type that only starts like JSON", "Content-Type: application/json-seq"],
    ["no type at all", ""],
  ];
  test.each(typed)("a body of %s is refused with 415 (read within the JSON limit: the route is known first)", async (_name, type) => {
    const body = JSON.stringify({ email: "nobody@example.com", password: "x" });
    const r = await send(`POST /api/v1/auth/login HTTP/1.1\n${type ? `${type}\n` : ""}Content-Length: ${body.length}`, body);
    expect(r.status).toBe(415);
    expect(JSON.parse(r.body).error.code).toBe("unsupported_media_type");
  });

  test("a typed body to a path that is no route: 404, not 415", async () => {
    const r = await send("PUT /api/v1/worker/tasks/a/ HTTP/1.1\nContent-Type: application/octet-stream\nContent-Length: 1", "x");
    expect(r.status).toBe(404);
  });

  test("the routes that stream their body are still reached: an artifact under its limit, a hook of any type, chunked", async () => {
    const artifact = await send(`PUT /api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nContent-Length: ${2 * MiB}`);
    expect([artifact.status, JSON.parse(artifact.body).error.code]).toEqual([401, "unauthorized"]);
    const chunked = await send("PUT /api/v1/worker/tasks/a/artifacts/b HTTP/1.1\nTransfer-Encoding: chunked");
    expect([chunked.status, JSON.parse(chunked.body).error.code]).toEqual([401, "unauthorized"]);
    const hook = await send("POST /api/v1/hooks/int_x HTTP/1.1\nContent-Type: application/x-www-form-urlencoded\nContent-Length: 5", "a=b&c");
    expect([hook.status, JSON.parse(hook.body).error.code]).toEqual([401, "unauthorized"]);
  });

  test("JSON with a charset and bodiless requests are accepted", async () => {
    const body = JSON.stringify({ email: "nobody@example.com", password: "wrong" });
    const r = await send(`POST /api/v1/auth/login HTTP/1.1\nContent-Type: application/json; charset=utf-8\nContent-Length: ${body.length}`, body);
    expect(r.status).toBe(401);
    const empty = await send("POST /api/v1/auth/logout HTTP/1.1\nContent-Type: text/plain\nContent-Length: 0");
    expect(empty.status).not.toBe(415);
  });

  test("a PATCH with a JSON body sent as text/plain is refused with 415 and changes nothing", async () => {
    const before = await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken });
    const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { name: "renamed" }, headers: { "content-type": "text/plain" } });
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe("unsupported_media_type");
    const after = await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken });
    expect(after.body).toEqual(before.body);
    expect(before.body.name).not.toBe("renamed");
  });
});
