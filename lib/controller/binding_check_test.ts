import assert from "node:assert/strict";
import {
  bindingProblem,
  bindingsByCluster,
  claimShortfall,
} from "./binding_check.ts";
import {
  binding,
  ENDPOINT,
  EXPORT_REF,
  NETWORK,
  OTHER_ENDPOINT,
  STORAGE,
  vwcClaim,
} from "../../testing/plan_fixtures.ts";

Deno.test("bindingsByCluster() reads each cluster's binding with whether any binding there accepts the claim", () => {
  const bindings = bindingsByCluster([
    binding(NETWORK, { name: "a", claims: [vwcClaim("Pending")] }),
    binding(NETWORK, { name: "b", endpoint: OTHER_ENDPOINT }),
    binding(NETWORK, { name: "c", claims: [] }),
    binding(STORAGE, {
      claims: [vwcClaim("Accepted", "mutatingwebhookconfigurations")],
    }),
  ]);
  assert.deepEqual([...bindings], [
    [NETWORK, { endpoint: ENDPOINT, claimAccepted: true }],
    [STORAGE, { endpoint: ENDPOINT, claimAccepted: false }],
  ]);
});

Deno.test("bindingProblem() says whether the workspace is unbound or has not accepted the claim", () => {
  const options = { shown: "workspace root:network", exportRef: EXPORT_REF };
  assert.equal(bindingProblem({ claimAccepted: true }, options), undefined);
  const unbound = bindingProblem(undefined, options);
  assert.equal(unbound?.reason, "ProviderNotBound");
  assert.match(
    unbound?.message ?? "",
    /^workspace root:network has not bound the APIExport root:dep-ctrl:dependencies\.opendefense\.cloud: /,
  );
  assert.equal(
    bindingProblem({ claimAccepted: false }, options)?.reason,
    "ClaimNotAccepted",
  );
});

Deno.test("claimShortfall() accepts matchAll with the verbs used, and names a label selector or a missing verb (kcp v0.31 lets a binding accept either)", () => {
  const claim = vwcClaim("Accepted") as Parameters<typeof claimShortfall>[0];
  for (
    const [name, change, expected] of [
      ["as the docs write it", {}, undefined],
      ["every verb", { verbs: ["*"] }, undefined],
      ["an older binding without verbs or selector", {
        verbs: undefined,
        selector: undefined,
      }, undefined],
      ["a label selector", {
        selector: { matchLabels: { team: "a" } },
      }, "only for objects matching a label selector"],
      ["matchAll false", {
        selector: { matchAll: false },
      }, "only for objects matching a label selector"],
      ["no create or delete", {
        verbs: ["get", "list", "watch", "update"],
      }, "without the verbs create, delete"],
    ] as const
  ) {
    assert.equal(claimShortfall({ ...claim, ...change }), expected, name);
  }
});

Deno.test("bindingsByCluster() and bindingProblem() refuse a claim accepted for labelled objects only, saying how to accept it", () => {
  const bindings = bindingsByCluster([
    binding(NETWORK, {
      claims: [{
        ...vwcClaim("Accepted"),
        selector: { matchLabels: { team: "a" } },
      }],
    }),
    binding(STORAGE, {
      name: "narrow",
      claims: [{ ...vwcClaim("Accepted"), verbs: ["get"] }],
    }),
    binding(STORAGE, { name: "full" }),
  ]);
  assert.deepEqual(bindings.get(NETWORK), {
    endpoint: ENDPOINT,
    claimAccepted: false,
    claimShortfall: "only for objects matching a label selector",
  });
  assert.deepEqual(bindings.get(STORAGE), {
    endpoint: ENDPOINT,
    claimAccepted: true,
  });
  const problem = bindingProblem(bindings.get(NETWORK), {
    shown: "workspace root:network",
    exportRef: EXPORT_REF,
  });
  assert.equal(problem?.reason, "ClaimNotAccepted");
  assert.equal(
    problem?.message,
    "workspace root:network binds root:dep-ctrl:dependencies.opendefense.cloud but accepts its validatingwebhookconfigurations.admissionregistration.k8s.io permission claim only for objects matching a label selector: accept it with selector matchAll: true and the verbs get, list, watch, create, update, delete in the APIBinding",
  );
});
