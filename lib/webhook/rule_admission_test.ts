import assert from "node:assert/strict";
import {
  type ExportAnswer,
  exportKey,
  type ExportReading,
  type ExportRef,
} from "../exports/mod.ts";
import { createLogger } from "../runtime/mod.ts";
import type { ClusterRule } from "../rules/mod.ts";
import {
  dependency,
  validRule,
  VIRTUAL_MACHINES,
  VPCS,
} from "../../testing/fakes.ts";
import {
  admitRules,
  dependentExport,
  type RuleAdmission,
  RuleAdmitter,
} from "./rule_admission.ts";

const PROVIDER: ClusterRule = {
  cluster: "computecluster",
  rule: validRule("vm", VIRTUAL_MACHINES, [
    dependency(VPCS, ".spec.vpcRef.name"),
  ]),
};
const TENANT: ClusterRule = { ...PROVIDER, cluster: "tenantcluster" };

function readings(
  entries: [ExportRef, ExportReading][],
): Map<string, ExportReading> {
  return new Map(entries.map(([ref, reading]) => [exportKey(ref), reading]));
}

const SERVES_VMS: ExportReading = {
  answer: {
    found: true,
    types: [{
      group: VIRTUAL_MACHINES.group,
      resource: VIRTUAL_MACHINES.resource,
      versions: [VIRTUAL_MACHINES.version],
      kind: VIRTUAL_MACHINES.kind,
    }],
  },
};

Deno.test("admitRules() admits a rule whose own workspace exports its dependent type", () => {
  const admission = admitRules(
    [PROVIDER],
    readings([[dependentExport(PROVIDER), SERVES_VMS]]),
  );
  assert.deepEqual(admission.admitted, [PROVIDER]);
  assert.deepEqual(admission.refused, []);
  assert.deepEqual(admission.pending, []);
  assert.deepEqual(admission.exports, [{
    workspace: "computecluster",
    name: "compute.example.com",
  }]);
});

Deno.test("admitRules() refuses a tenant's rule about a type its workspace does not export", () => {
  const admission = admitRules(
    [PROVIDER, TENANT],
    readings([
      [dependentExport(PROVIDER), SERVES_VMS],
      [dependentExport(TENANT), { answer: { found: false } }],
    ]),
  );
  assert.deepEqual(admission.admitted, [PROVIDER]);
  assert.equal(admission.refused.length, 1);
  assert.equal(admission.refused[0]!.rule, TENANT);
  assert.equal(admission.refused[0]!.reason, "APIExportNotFound");
  assert.match(
    admission.refused[0]!.message,
    /no APIExport compute\.example\.com in the rule's own workspace \(tenantcluster\)/,
  );
  // One that exports something else: TypeNotExported.
  const other = admitRules(
    [TENANT],
    readings([[dependentExport(TENANT), {
      answer: { found: true, types: [] },
    }]]),
  );
  assert.equal(other.refused[0]?.reason, "TypeNotExported");
  assert.deepEqual(other.admitted, []);
});

Deno.test("admitRules() holds back a rule not read yet, and admits one that cannot be read", () => {
  const waiting = admitRules([PROVIDER], new Map());
  assert.deepEqual(waiting.pending, [PROVIDER]);
  assert.deepEqual(waiting.admitted, []);
  const failed = admitRules(
    [PROVIDER],
    readings([[dependentExport(PROVIDER), { error: "403 Forbidden" }]]),
  );
  assert.deepEqual(failed.admitted, [PROVIDER]);
  // What was last read stays the answer while a new read fails.
  const stale = admitRules(
    [TENANT],
    readings([[dependentExport(TENANT), {
      answer: { found: false },
      error: "outage",
    }]]),
  );
  assert.equal(stale.refused.length, 1);
});

/** Resolves when `check` holds, polling the event loop. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) {
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(check(), "condition never held");
}

Deno.test("RuleAdmitter loads nothing until every rule of the first load is read, then every change", async () => {
  const answers = new Map<string, ExportAnswer>([
    ["computecluster", SERVES_VMS.answer!],
    ["tenantcluster", { found: false }],
  ]);
  const gates = new Map<string, () => void>();
  const admissions: RuleAdmission[] = [];
  const logs: string[] = [];
  const admitter = new RuleAdmitter({
    read: (ref) =>
      new Promise((resolve) =>
        gates.set(ref.workspace, () => resolve(answers.get(ref.workspace)!))
      ),
    log: createLogger({
      level: "warn",
      write: (line) => logs.push(line),
    }),
    onAdmitted: (admission) => admissions.push(admission),
    backoff: { initialMs: 10, maxMs: 20 },
  });
  try {
    admitter.update([PROVIDER, TENANT]);
    await until(() => gates.size === 2);
    gates.get("computecluster")!();
    await new Promise((r) => setTimeout(r, 20));
    // One export is still being read: nothing is loaded yet.
    assert.equal(admissions.length, 0);
    gates.get("tenantcluster")!();
    await until(() => admissions.length === 1);
    assert.deepEqual(admissions[0]!.admitted, [PROVIDER]);
    assert.equal(admissions[0]!.refused[0]?.rule, TENANT);
    assert.equal(logs.filter((l) => l.includes("not enforcing")).length, 1);
    // After the first load, a new rule waits for its read without holding
    // back the others, and a refusal already logged is not logged again.
    const late: ClusterRule = { ...PROVIDER, cluster: "latecluster" };
    answers.set("latecluster", SERVES_VMS.answer!);
    admitter.update([PROVIDER, TENANT, late]);
    assert.equal(admissions.length, 2);
    assert.deepEqual(admissions[1]!.pending, [late]);
    assert.deepEqual(admissions[1]!.admitted, [PROVIDER]);
    await until(() => gates.has("latecluster"));
    gates.get("latecluster")!();
    await until(() => admissions.length === 3);
    assert.deepEqual(admissions[2]!.admitted, [PROVIDER, late]);
    assert.equal(logs.filter((l) => l.includes("not enforcing")).length, 1);
  } finally {
    await admitter.stop();
  }
});

Deno.test("admitRules() gives each admitted rule its dependent export's identity, where read", () => {
  const withIdentity: ExportReading = {
    answer: {
      ...(SERVES_VMS.answer as ExportAnswer & { found: true }),
      identityHash: "real",
    },
  };
  const admission = admitRules(
    [PROVIDER, { ...PROVIDER, cluster: "other" }],
    readings([
      [dependentExport(PROVIDER), withIdentity],
      [{ workspace: "other", name: "compute.example.com" }, SERVES_VMS],
    ]),
  );
  assert.equal(admission.admitted.length, 2);
  assert.deepEqual(
    admission.identities,
    new Map([["computecluster/vm", "real"]]),
  );
});
