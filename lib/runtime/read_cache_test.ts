import assert from "node:assert/strict";
import { createLogger } from "./log.ts";
import { ReadCache } from "./read_cache.ts";

/** A reference as the tests read it. */
interface Ref {
  workspace: string;
  name: string;
}
/** What a read gives, shaped like an APIExport's answer. */
type Answer = { found: true; types: string[] } | { found: false };

function exportKey(ref: Ref): string {
  return `${ref.workspace}\n${ref.name}`;
}

const A: Ref = { workspace: "root:a", name: "a.io" };
const B: Ref = { workspace: "root:b", name: "b.io" };
const FOUND: Answer = { found: true, types: [] };

/** Resolves when `check` holds, polling the event loop. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) {
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(check(), "condition never held");
}

function cache(
  read: (ref: Ref) => Promise<Answer>,
): { cache: ReadCache<Ref, Answer>; changes: () => number } {
  let changes = 0;
  const c = new ReadCache<Ref, Answer>({
    key: exportKey,
    what: "thing",
    read,
    log: createLogger({ level: "error", write: () => {} }),
    onChange: () => changes++,
    backoff: { initialMs: 10, maxMs: 20 },
  });
  return { cache: c, changes: () => changes };
}

Deno.test("ReadCache reads the wanted exports once and calls onChange", async () => {
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

Deno.test("ReadCache keeps the last answer beside a failed read, and retries with backoff", async () => {
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

Deno.test("ReadCache records a failure without an answer when the first read fails", async () => {
  const { cache: c } = cache(() => Promise.reject(new Error("outage")));
  c.want([B]);
  await until(() => c.readings().has(exportKey(B)));
  assert.deepEqual(c.readings().get(exportKey(B)), { error: "outage" });
  await c.stop();
});

Deno.test("ReadCache reports a changed answer as a change, and an equal one not", async () => {
  const answer = (name: string): Answer => ({
    found: true,
    types: [`spec.${name}`],
  });
  let field = "volume";
  const { cache: c, changes } = cache(() => Promise.resolve(answer(field)));
  c.want([A]);
  await until(() => changes() === 1);
  // The same schema read again changes nothing.
  c.refresh();
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(changes(), 1);
  // The answer changes: the plan must run again.
  field = "volumes";
  c.refresh();
  await until(() => changes() === 2);
  assert.deepEqual(c.readings().get(exportKey(A)), {
    answer: answer("volumes"),
  });
  await c.stop();
});

Deno.test("ReadCache reads again, every recheck interval, the answers it is told to", async () => {
  let reads = 0;
  let answer: Answer = { found: false };
  const c = new ReadCache<Ref, Answer>({
    key: exportKey,
    what: "thing",
    read: () => {
      reads++;
      return Promise.resolve(answer);
    },
    log: createLogger({ level: "error", write: () => {} }),
    onChange: () => {},
    recheck: { when: (a) => !a.found, everyMs: 10 },
  });
  try {
    c.want([A]);
    await until(() => reads >= 3);
    answer = FOUND;
    await until(() => c.readings().get(exportKey(A))?.answer?.found === true);
    const settled = reads;
    await new Promise((r) => setTimeout(r, 50));
    // A found answer is not read again until a refresh.
    assert.equal(reads, settled);
  } finally {
    await c.stop();
  }
});

Deno.test("ReadCache logs a first answer at debug, a changed one at info and a failure at warn", async () => {
  const records: { level: string; msg: string }[] = [];
  let answer: Answer = FOUND;
  let fail = false;
  const c = new ReadCache<Ref, Answer>({
    key: exportKey,
    what: "thing",
    read: () =>
      fail ? Promise.reject(new Error("down")) : Promise.resolve(answer),
    log: createLogger({
      level: "debug",
      write: (line) => records.push(JSON.parse(line)),
    }),
    onChange: () => {},
    backoff: { initialMs: 10, maxMs: 20 },
    recheck: { when: () => true, everyMs: 10 },
  });
  try {
    c.want([A]);
    await until(() => records.length === 1);
    assert.equal(records[0]!.level, "debug");
    answer = { found: false };
    await until(() => records.length === 2);
    assert.equal(records[1]!.level, "info");
    fail = true;
    await until(() => records.length === 3);
    assert.equal(records[2]!.level, "warn");
    assert.ok(records.every((r) => r.msg === "read thing"));
  } finally {
    c.stop();
  }
});
