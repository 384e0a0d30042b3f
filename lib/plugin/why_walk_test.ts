import assert from "node:assert/strict";
import type { Cause, CauseObject } from "../causes/mod.ts";
import type { Decision } from "./why_decision.ts";
import { type Ask, nodesOf, walkWhy, type WhyNode } from "./why_walk.ts";

/** A VirtualMachine (or, with `kind`, another type) in `default`. */
function object(name: string, kind = "VirtualMachine"): CauseObject {
  return {
    group: "example.com",
    version: "v1",
    resource: `${kind.toLowerCase()}s`,
    kind,
    namespace: "default",
    name,
  };
}

function reference(name: string): Cause {
  return {
    type: "Reference",
    object: object(name),
    fields: [".spec.ref.name"],
    rules: ["c/r"],
  };
}

function owner(name: string): Cause {
  return {
    type: "Owner",
    object: object(name, "Network"),
    field: '.metadata.labels["owner"]',
    rule: "c/owner",
  };
}

const LOCK: Cause = {
  type: "Lock",
  lock: { namespace: "default", name: "keep" },
  reason: "keep",
};

/**
 * An `ask` over a fixed world: what holds each object by name (held when
 * it has causes, free when absent), with every question recorded and the
 * most in flight at once measured.
 */
function world(holds: Record<string, Cause[]>, options: {
  special?: Record<string, Decision>;
} = {}): { ask: Ask; asked: string[]; maxInFlight: () => number } {
  const asked: string[] = [];
  let inFlight = 0;
  let most = 0;
  const ask: Ask = async (o) => {
    asked.push(o.name);
    inFlight++;
    most = Math.max(most, inFlight);
    // Let the other questions of the level start before this one ends.
    await Promise.resolve();
    await new Promise((resolve) => queueMicrotask(() => resolve(undefined)));
    inFlight--;
    const special = options.special?.[o.name];
    if (special !== undefined) return special;
    const causes = holds[o.name];
    return causes === undefined || causes.length === 0
      ? { state: "free" }
      : { state: "held", causes, message: `held: ${o.name}` };
  };
  return { ask, asked, maxInFlight: () => most };
}

/** `name:state` of every node, depth first, children indented. */
function outline(node: WhyNode, depth = 0): string[] {
  return [
    `${"  ".repeat(depth)}${node.object.name}:${node.state}`,
    ...(node.children ?? []).flatMap((c) => outline(c, depth + 1)),
  ];
}

Deno.test("walkWhy: without --recursive, one question and no children", async () => {
  const { ask, asked } = world({ a: [reference("b"), LOCK] });
  const node = await walkWhy(object("a"), ask);
  assert.deepEqual(asked, ["a"]);
  assert.deepEqual(node, {
    object: object("a"),
    state: "held",
    held: true,
    message: "held: a",
    causes: [reference("b"), LOCK],
  });
});

Deno.test("walkWhy: recursive follows references and owners, not Locks, as a tree in the causes' order", async () => {
  const { ask, asked } = world({
    a: [reference("b"), LOCK, owner("n")],
    b: [reference("c")],
    c: [LOCK],
  });
  const node = await walkWhy(object("a"), ask, { recursive: true });
  assert.deepEqual(outline(node), [
    "a:held",
    "  b:held",
    "    c:held",
    "  n:free",
  ]);
  assert.deepEqual(asked.sort(), ["a", "b", "c", "n"]);
  // A leaf asked about has no children but an empty list; held answers keep their causes.
  const c = [...nodesOf(node)].find((n) => n.object.name === "c")!;
  assert.deepEqual(c.children, []);
  assert.deepEqual(c.causes, [LOCK]);
  const n = [...nodesOf(node)].find((x) => x.object.name === "n")!;
  assert.deepEqual(n, {
    object: object("n", "Network"),
    state: "free",
    held: false,
    causes: [],
    children: [],
  });
});

Deno.test("walkWhy: a cycle back to an ancestor is marked, not asked again", async () => {
  const { ask, asked } = world({
    a: [reference("b")],
    b: [reference("c")],
    c: [reference("a"), reference("b")],
  });
  const node = await walkWhy(object("a"), ask, { recursive: true });
  assert.deepEqual(outline(node), [
    "a:held",
    "  b:held",
    "    c:held",
    "      a:cycle",
    "      b:cycle",
  ]);
  assert.deepEqual(asked, ["a", "b", "c"]);
});

Deno.test("walkWhy: an object held in two places is asked once, shown once, then seen", async () => {
  const { ask, asked } = world({
    a: [reference("b"), reference("c")],
    b: [reference("d")],
    c: [reference("d")],
    d: [LOCK],
  });
  const node = await walkWhy(object("a"), ask, { recursive: true });
  assert.deepEqual(outline(node), [
    "a:held",
    "  b:held",
    "    d:held",
    "  c:held",
    "    d:seen",
  ]);
  assert.equal(asked.filter((n) => n === "d").length, 1);
});

Deno.test("walkWhy: an object met first deeper in the tree than in the walk is still shown in full first", async () => {
  // The walk asks d at level 1 (a's second cause), the tree meets it
  // first under b: it is shown there, then seen.
  const { ask } = world({
    a: [reference("b"), reference("d")],
    b: [reference("d")],
    d: [LOCK],
  });
  const node = await walkWhy(object("a"), ask, { recursive: true });
  assert.deepEqual(outline(node), [
    "a:held",
    "  b:held",
    "    d:held",
    "  d:seen",
  ]);
});

Deno.test("walkWhy: the walk asks about at most `limit` objects; the rest are cut", async () => {
  // A chain of 10 held objects, each also naming a free one.
  const holds: Record<string, Cause[]> = {};
  for (let i = 0; i < 10; i++) {
    holds[`h${i}`] = [reference(`h${i + 1}`), reference(`f${i}`)];
  }
  const { ask, asked } = world(holds);
  const node = await walkWhy(object("h0"), ask, {
    recursive: true,
    limit: 5,
  });
  assert.equal(asked.length, 5);
  assert.deepEqual(asked, ["h0", "h1", "f0", "h2", "f1"]);
  const states = [...nodesOf(node)].map((n) => `${n.object.name}:${n.state}`);
  assert.deepEqual(states, [
    "h0:held",
    "h1:held",
    "h2:held",
    "h3:cut",
    "f2:cut",
    "f1:free",
    "f0:free",
  ]);
});

Deno.test("walkWhy: a wide level is asked a few at a time, each object once", async () => {
  const many = Array.from({ length: 30 }, (_, i) => reference(`d${i}`));
  const { ask, asked, maxInFlight } = world({ a: many });
  const node = await walkWhy(object("a"), ask, {
    recursive: true,
    concurrency: 3,
  });
  assert.equal(asked.length, 31);
  assert.equal(new Set(asked).size, 31);
  assert.ok(maxInFlight() <= 3, `at most 3 in flight, saw ${maxInFlight()}`);
  assert.ok(maxInFlight() >= 2, "questions of a level overlap");
  assert.deepEqual(
    node.children!.map((c) => c.object.name),
    many.map((c) => (c as { object: CauseObject }).object.name),
  );
});

Deno.test("walkWhy: a question that fails or is denied is a leaf of its own kind; the walk goes on", async () => {
  const { ask } = world(
    { a: [reference("b"), reference("c"), reference("d")] },
    {
      special: {
        b: { state: "error", message: "you may not delete virtualmachines" },
        c: { state: "denied", code: 503, message: "cannot check now" },
      },
    },
  );
  const throwing: Ask = (o) =>
    o.name === "d" ? Promise.reject(new Error("connection reset")) : ask(o);
  const node = await walkWhy(object("a"), throwing, { recursive: true });
  assert.deepEqual(node.children, [
    {
      object: object("b"),
      state: "error",
      error: "you may not delete virtualmachines",
    },
    {
      object: object("c"),
      state: "denied",
      held: true,
      message: "cannot check now",
      causes: [],
      children: [],
    },
    { object: object("d"), state: "error", error: "connection reset" },
  ]);
});

Deno.test("walkWhy: the root's own failure is an error node, for the command to report", async () => {
  const node = await walkWhy(
    object("a"),
    () => Promise.resolve({ state: "error", message: "not found" }),
    { recursive: true },
  );
  assert.deepEqual(node, {
    object: object("a"),
    state: "error",
    error: "not found",
  });
});

Deno.test("walkWhy: the same answers make the same tree, whatever order they arrive in", async () => {
  const holds = {
    a: [reference("b"), reference("c"), owner("n")],
    b: [reference("c"), reference("e")],
    c: [reference("e"), reference("a")],
    e: [LOCK],
  };
  const trees: string[][] = [];
  for (const delays of [[0, 3, 1, 2, 0], [2, 0, 3, 0, 1]]) {
    const { ask } = world(holds);
    let call = 0;
    const shuffled: Ask = async (o) => {
      const wait = delays[call++ % delays.length]!;
      for (let i = 0; i < wait; i++) await Promise.resolve();
      return await ask(o);
    };
    trees.push(
      outline(await walkWhy(object("a"), shuffled, { recursive: true })),
    );
  }
  assert.deepEqual(trees[0], trees[1]);
  assert.deepEqual(trees[0], [
    "a:held",
    "  b:held",
    "    c:held",
    "      e:held",
    "      a:cycle",
    "    e:seen",
    "  c:seen",
    "  n:free",
  ]);
});
