import assert from "node:assert/strict";
import type { ComponentProcess, WebhookProcess } from "./components.ts";
import {
  ControllerWorld,
  protectedResources,
  watchesFailing,
  withControllerWorld,
} from "./controller_world.ts";

/** The `apiExportRef.path` of each dependency of a rule object. */
function pathsOf(rule: Record<string, unknown>): string[] {
  const spec = rule.spec as {
    dependencies: { apiExportRef: { path: string } }[];
  };
  return spec.dependencies.map((d) => d.apiExportRef.path);
}

/** A process whose /metrics serves `text` and that records its stop. */
function fakeProcess(
  name: string,
  stopped: string[],
  text = "",
): ComponentProcess & WebhookProcess {
  return {
    pid: 1,
    healthPort: 1,
    metricsPort: 2,
    port: 3,
    url: "https://127.0.0.1:3/validate",
    cert: {} as WebhookProcess["cert"],
    logFile: `${name}.log`,
    stop: () => {
      stopped.push(name);
      return Promise.resolve(0);
    },
    waitReady: () => Promise.resolve(),
    get: (port) =>
      Promise.resolve(
        port === 2 ? { status: 200, text } : { status: 404, text: "" },
      ),
    log: () => Promise.resolve(""),
  };
}

Deno.test("ControllerWorld.rule() puts a dependency without a path in the provider of its resource", () => {
  const w = new ControllerWorld();
  const rule = w.rule("r", [
    { resource: "vpcs", field: ".spec.vpcRef.name" },
    { resource: "subnets", field: ".spec.subnetRef.name" },
    { resource: "virtualmachines", field: ".spec.parentRef.name" },
    { path: "root:org:nope", resource: "vpcs", field: ".spec.altVpcRef.name" },
  ]);
  assert.deepEqual(pathsOf(rule), [
    "root:org:team:network",
    "root:org:team:network",
    "root:providers:compute",
    "root:org:nope",
  ]);
  const spec = rule.spec as { dependent: { kind: string } };
  assert.equal(spec.dependent.kind, "VirtualMachine");
  const vpc = w.rule("v", [{
    resource: "virtualmachines",
    field: ".spec.vpcRef.name",
  }], { dependent: "VPC" });
  assert.equal(
    (vpc.spec as { dependent: { kind: string } }).dependent.kind,
    "VPC",
  );
});

Deno.test("ControllerWorld.inC1() and inC2() are objects in the consumers' default namespace", () => {
  const w = new ControllerWorld();
  w.c1 = "root:consumers:c1";
  w.c2 = "root:consumers:c2";
  assert.deepEqual(w.inC1("vpcs", "vpc-a"), {
    workspace: "root:consumers:c1",
    type: "vpcs",
    namespace: "default",
    name: "vpc-a",
  });
  assert.equal(w.inC2("subnets", "s").workspace, "root:consumers:c2");
});

Deno.test("protectedResources() lists every rule's resources in order; none for no configuration", () => {
  assert.deepEqual(protectedResources(undefined), []);
  assert.deepEqual(protectedResources({}), []);
  assert.deepEqual(
    protectedResources({
      webhooks: [
        { rules: [{ resources: ["subnets"] }, { resources: ["vpcs"] }] },
        {},
        { rules: [{}, { resources: ["virtualmachines"] }] },
      ],
    }),
    ["subnets", "vpcs", "virtualmachines"],
  );
});

Deno.test("watchesFailing() reads the component's gauge, NaN when it is not served", async () => {
  const text = [
    "# TYPE dependency_controller_watches_failing gauge",
    "dependency_controller_watches_failing 3",
    "dependency_webhook_watches_failing 0",
  ].join("\n");
  const process = fakeProcess("p", [], text);
  assert.equal(await watchesFailing(process, "controller"), 3);
  assert.equal(await watchesFailing(process, "webhook"), 0);
  assert.ok(
    Number.isNaN(await watchesFailing(fakeProcess("q", []), "webhook")),
  );
});

Deno.test("withControllerWorld() stops the controllers left; after a failure the webhook too", async () => {
  const stopped: string[] = [];
  await withControllerWorld((w) => {
    w.webhook = fakeProcess("webhook", stopped);
    w.controller = fakeProcess("controller", stopped);
    w.others.push(fakeProcess("replica", stopped));
    return Promise.resolve();
  });
  assert.deepEqual(stopped, ["controller", "replica"]);

  stopped.length = 0;
  const error = console.error;
  console.error = () => {};
  try {
    await assert.rejects(
      withControllerWorld((w) => {
        w.webhook = fakeProcess("webhook", stopped);
        w.controller = fakeProcess("controller", stopped);
        return Promise.reject(new Error("a step failed"));
      }),
      /a step failed/,
    );
  } finally {
    console.error = error;
  }
  assert.deepEqual(stopped, ["controller", "webhook"]);
});
