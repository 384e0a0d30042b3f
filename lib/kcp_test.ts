import assert from "node:assert/strict";
import {
  baseUrl,
  clusterUrl,
  isLogicalClusterName,
  isWorkspacePath,
  splitWorkspacePath,
} from "./kcp.ts";

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
