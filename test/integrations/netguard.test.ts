// The address rules for callback targets, as a table, and the resolved-address check; the
// Retry-After parser. (The HTTP behaviour is covered in callbacks.test.ts.)
import { describe, expect, test } from "bun:test";
import { checkTargetUrl, isPrivateAddress, resolveTarget, TargetRefused } from "../../src/modules/integrations/netguard";
import { retryAfterMs } from "../../src/modules/integrations/relay";

const PRIVATE = [
  "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255", "192.168.0.1",
  "169.254.169.254", "169.254.0.1", "0.0.0.0", "100.64.0.1", "100.100.100.200", "224.0.0.1", "255.255.255.255",
  "::1", "::", "0:0:0:0:0:0:0:1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd00:ec2::254", "fec0::1", "ff02::1",
  // IPv4 inside IPv6: mapped, NAT64 (a gateway may reach private IPv4), 6to4, IPv4-compatible, IPv4-translated
  "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe",
  "64:ff9b::10.1.2.3", "2002:7f00:1::", "2002:c0a8:101::1", "::127.0.0.1", "::7f00:1", "::ffff:0:127.0.0.1",
];
const PUBLIC = [
  "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
  "2001:4860:4860::8888", "64:ff9b::8.8.8.8", "2002:808:808::1",
];

describe("isPrivateAddress", () => {
  test.each(PRIVATE)("%s is private", (a) => expect(isPrivateAddress(a)).toBe(true));
  test.each(PUBLIC)("%s is public", (a) => expect(isPrivateAddress(a)).toBe(false));
});

describe("checkTargetUrl", () => {
  test("literal private hosts and localhost names are refused unless allowed", () => {
    for (const url of [
      "http://127.0.0.1/", "http://[::1]:8080/", "http://localhost/", "http://localhost./", "http://LocalHost:80/", "http://a.b.localhost./",
      "http://169.254.169.254/", "http://0177.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://0/",
      "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::169.254.169.254]/",
    ]) {
      expect(() => checkTargetUrl(url, false)).toThrow(TargetRefused);
      expect(checkTargetUrl(url, true)).toBeInstanceOf(URL);
    }
  });
  test("shape rules hold even when private targets are allowed", () => {
    for (const url of ["ftp://example.test/", "file:///etc/passwd", "https://user:pw@example.test/", "not a url", "javascript:alert(1)"]) {
      expect(() => checkTargetUrl(url, true)).toThrow(TargetRefused);
    }
  });
});

describe("resolveTarget (the address the name resolves to)", () => {
  test("a name resolving to loopback is refused, and allowed when private targets are", async () => {
    await expect(resolveTarget(new URL("http://localhost:9/"), false)).rejects.toThrow(/localhost resolves to/);
    const ok = await resolveTarget(new URL("http://localhost:9/"), true);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.every((a) => isPrivateAddress(a.address))).toBe(true);
  });
  test("a literal public address is returned as is, without a lookup", async () => {
    expect(await resolveTarget(new URL("https://8.8.8.8/"), false)).toEqual([{ address: "8.8.8.8", family: 4 }]);
  });
});

test("Retry-After: delta seconds, an HTTP date, garbage, capped at a day", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  expect(retryAfterMs("120", now)).toBe(120_000);
  expect(retryAfterMs("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000);
  expect(retryAfterMs("soon", now)).toBeUndefined();
  expect(retryAfterMs(null, now)).toBeUndefined();
  expect(retryAfterMs("999999999", now)).toBe(24 * 3600 * 1000);
  expect(retryAfterMs("Wed, 31 Dec 2025 00:00:00 GMT", now)).toBe(0);
});
