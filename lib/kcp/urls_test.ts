import assert from "node:assert/strict";
import {
  baseUrl,
  clusterUrl,
  isDnsLabel,
  isDnsSubdomain,
  isLogicalClusterName,
  isWorkspacePath,
  pathSegment,
  splitWorkspacePath,
} from "./urls.ts";

Deno.test("baseUrl() cuts the /clusters/ suffix and trailing slashes", () => {
  const cases: [string, string][] = [
    [
      "https://kcp.example:6443/clusters/root:dep-ctrl",
      "https://kcp.example:6443",
    ],
    ["https://kcp.example/clusters/2x5jd0ws3r7t", "https://kcp.example"],
    ["https://kcp.example:6443/", "https://kcp.example:6443"],
    ["https://kcp.example:6443", "https://kcp.example:6443"],
    ["https://proxy.example/kcp/clusters/root", "https://proxy.example/kcp"],
    ["http://127.0.0.1:8080/clusters/root/", "http://127.0.0.1:8080"],
  ];
  for (const [input, want] of cases) assert.equal(baseUrl(input), want, input);
});

Deno.test("baseUrl() rejects what is not an http(s) URL", () => {
  assert.throws(() => baseUrl("kcp.example:6443"), TypeError);
  assert.throws(() => baseUrl("not a url"), /Cannot parse kcp server URL/);
  assert.throws(
    () => baseUrl("ftp://kcp.example/clusters/root"),
    /scheme 'ftp:'/,
  );
});

Deno.test("clusterUrl() joins base and cluster without doubled slashes", () => {
  assert.equal(
    clusterUrl("https://k:6443", "root:a"),
    "https://k:6443/clusters/root:a",
  );
  assert.equal(clusterUrl("https://k:6443/", "*"), "https://k:6443/clusters/*");
});

Deno.test("isWorkspacePath() accepts root-style paths and rejects others", () => {
  for (const ok of ["root", "root:org-1:team-2", "root:a", "x1"]) {
    assert.ok(isWorkspacePath(ok), ok);
  }
  for (
    const bad of [
      "",
      "root:",
      ":root",
      "Root",
      "root::a",
      "root:a_b",
      "root:-a",
      "root:a-",
    ]
  ) {
    assert.ok(!isWorkspacePath(bad), bad);
  }
});

Deno.test("isLogicalClusterName() accepts single segments only", () => {
  assert.ok(isLogicalClusterName("root"));
  assert.ok(isLogicalClusterName("2x5jd0ws3r7tgk1q"));
  assert.ok(!isLogicalClusterName("root:org"));
  assert.ok(!isLogicalClusterName(""));
  assert.ok(!isLogicalClusterName("*"));
});

Deno.test("splitWorkspacePath() returns parent and name, undefined for root", () => {
  assert.deepEqual(splitWorkspacePath("root:org:team"), {
    parent: "root:org",
    name: "team",
  });
  assert.deepEqual(splitWorkspacePath("root:org"), {
    parent: "root",
    name: "org",
  });
  assert.equal(splitWorkspacePath("root"), undefined);
  assert.throws(() => splitWorkspacePath("root::x"), TypeError);
});

Deno.test("pathSegment() encodes everything that could add a segment, a query or a fragment", () => {
  assert.equal(pathSegment("root:org"), "root:org");
  assert.equal(pathSegment("*"), "*");
  assert.equal(pathSegment("a/b?c#d%e f"), "a%2Fb%3Fc%23d%25e%20f");
  assert.equal(pathSegment("x!'()"), "x%21%27%28%29");
  for (const value of ["", ".", ".."]) {
    assert.throws(() => pathSegment(value), TypeError);
  }
  assert.equal(
    new URL(`https://kcp.example/clusters/${pathSegment("%2e%2e")}`).pathname,
    "/clusters/%252e%252e",
  );
});

Deno.test("clusterUrl() puts the cluster in one encoded segment", () => {
  assert.equal(
    clusterUrl("https://kcp.example/", "root/api/v1/secrets?x=y#"),
    "https://kcp.example/clusters/root%2Fapi%2Fv1%2Fsecrets%3Fx%3Dy%23",
  );
});

Deno.test("isDnsLabel() and isDnsSubdomain() follow Kubernetes' name rules", () => {
  assert.ok(isDnsLabel("default"));
  assert.ok(!isDnsLabel("a".repeat(64)));
  assert.ok(!isDnsLabel("a.b"));
  assert.ok(isDnsSubdomain("vpc-a.v1"));
  assert.ok(isDnsSubdomain("a".repeat(64)), "labels of any length");
  assert.ok(isDnsSubdomain("a".repeat(253)));
  assert.ok(!isDnsSubdomain("a".repeat(254)));
  for (const bad of ["", "A", "-a", "a-", "a..b", "../x", "a/b", "a b"]) {
    assert.ok(!isDnsSubdomain(bad), bad);
  }
});
