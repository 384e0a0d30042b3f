import assert from "node:assert/strict";
import { createLogger } from "../runtime/mod.ts";
import { ExportCache } from "./export_cache.ts";
import type { ExportAnswer, ExportRef } from "./export_checks.ts";
import { exportKey } from "./export_checks.ts";

const A: ExportRef = { workspace: "root:a", name: "a.io" };
const B: ExportRef = { workspace: "root:b", name: "b.io" };
const FOUND: ExportAnswer = { found: true, types: [] };

/** Resolves when `check` holds, polling the event loop. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) {
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(check(), "condition never held");
}

function cache(
  read: (ref: ExportRef) => Promise<ExportAnswer>,
): { cache: ExportCache; changes: () => number } {
  let changes = 0;
  const c = new ExportCache({
    read,
    log: createLogger({ level: "error", write: () => {} }),
    onChange: () => changes++,
    backoff: { initialMs: 10, maxMs: 20 },
  });
  return { cache: c, changes: () => changes };
}

Deno.test("ExportCache reads the wanted exports once and calls onChange", async () => {
  const reads: string[] = [];
  const { cache: c, changes } = cache((ref) => {
    reads.push(ref.name);
    return Promise.resolve(ref === A ? FOUND : { found: false });
  });
  c.want([A, B]);
  await until(() => c.readings().size === 2);
  assert.deepEqual(c.readings().get(exportKey(A)), { answer: FOUND });
  assert.deepEqual(c.readings().get(exportKey(B)), {
    answer: { found: false },
  });
  assert.equal(changes(), 2);
  c.want([A, B]);
  await new Promise((r) => setTimeout(r, 30));
  assert.deepEqual(reads.sort(), ["a.io", "b.io"]);
  // Forgetting one drops its answer.
  c.want([A]);
  assert.deepEqual([...c.readings().keys()], [exportKey(A)]);
  await c.stop();
});

Deno.test("ExportCache keeps the last answer beside a failed read, and retries with backoff", async () => {
  let fail = false;
  let reads = 0;
  const { cache: c } = cache(() => {
    reads++;
    return fail
      ? Promise.reject(new Error("403 Forbidden"))
      : Promise.resolve(FOUND);
  });
  c.want([A]);
  await until(() => c.readings().has(exportKey(A)));
  fail = true;
  c.refresh();
  await until(() => c.readings().get(exportKey(A))?.error !== undefined);
  assert.deepEqual(c.readings().get(exportKey(A)), {
    answer: FOUND,
    error: "403 Forbidden",
  });
  const failedReads = reads;
  // Retried on its own timer after the backoff.
  await until(() => reads > failedReads);
  fail = false;
  await until(() => c.readings().get(exportKey(A))?.error === undefined);
  assert.deepEqual(c.readings().get(exportKey(A)), { answer: FOUND });
  await c.stop();
});

Deno.test("ExportCache records a failure without an answer when the first read fails", async () => {
  const { cache: c } = cache(() => Promise.reject(new Error("outage")));
  c.want([B]);
  await until(() => c.readings().has(exportKey(B)));
  assert.deepEqual(c.readings().get(exportKey(B)), { error: "outage" });
  await c.stop();
});

Deno.test("ExportCache reports a changed schema as a change, and an equal one not", async () => {
  const answer = (name: string): ExportAnswer => ({
    found: true,
    types: [{
      group: "a.io",
      resource: "vms",
      versions: ["v1"],
      kind: "VM",
      schemas: {
        v1: {
          type: "object",
          properties: { spec: { type: "object", properties: { [name]: {} } } },
        },
      },
    }],
  });
  let field = "volume";
  const { cache: c, changes } = cache(() => Promise.resolve(answer(field)));
  c.want([A]);
  await until(() => changes() === 1);
  // The same schema read again changes nothing.
  c.refresh();
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(changes(), 1);
  // The provider renames the field: the plan must run again.
  field = "volumes";
  c.refresh();
  await until(() => changes() === 2);
  assert.deepEqual(c.readings().get(exportKey(A)), {
    answer: answer("volumes"),
  });
  await c.stop();
});
