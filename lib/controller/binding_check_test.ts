import assert from "node:assert/strict";
import { bindingProblem, bindingsByCluster } from "./binding_check.ts";
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
