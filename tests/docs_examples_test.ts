/**
 * The examples in the documentation against what they promise: every YAML a
 * reader may copy (```yaml blocks, and heredocs fed to `kubectl apply -f -`
 * in ```sh blocks) parses; a Lock's parsed `reason` is the one the text says
 * its denial shows; and every table of status reasons lists only reasons
 * the code writes, and all of those the table is about.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { CONDITION_REASONS } from "../lib/rules/mod.ts";
import { LOCK_CONDITION_REASONS } from "../lib/locks/mod.ts";

const ROOT = new URL("../", import.meta.url);

/** Every Markdown file a reader follows. */
async function markdownFiles(): Promise<string[]> {
  const files = ["README.md", "manifests/README.md"];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      files.push(`docs/${entry.name}`);
    }
  }
  for await (const entry of Deno.readDir(new URL("charts/", ROOT))) {
    if (entry.isDirectory) files.push(`charts/${entry.name}/README.md`);
  }
  return files.sort();
}

/** A YAML text found in a Markdown file, with the line it starts on. */
interface Example {
  file: string;
  line: number;
  text: string;
}

/**
 * The YAML of ```yaml blocks and of `<<'EOF'` heredocs in ```sh blocks;
 * blocks marked ```yaml but holding a fragment (starting with `...` or a
 * list item of a bigger file) are kept: they must parse too.
 */
function yamlExamples(file: string, markdown: string): Example[] {
  const lines = markdown.split("\n");
  const examples: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (fence === null) continue;
    const language = fence[2];
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    const body = lines.slice(start, end);
    if (language === "yaml") {
      examples.push({ file, line: start + 1, text: body.join("\n") });
    } else if (language === "sh" || language === "bash") {
      for (let j = 0; j < body.length; j++) {
        const heredoc = /<<-?\s*'?(\w+)'?\s*$/.exec(body[j]!);
        if (heredoc === null || !/\bapply\b/.test(body[j]!)) continue;
        const close = body.findIndex((l, k) => k > j && l === heredoc[1]);
        if (close === -1) continue;
        examples.push({
          file,
          line: start + j + 2,
          text: body.slice(j + 1, close).join("\n"),
        });
        j = close;
      }
    }
    i = end;
  }
  return examples;
}

/** The objects of an example; throws with the file and line if it does not parse. */
function parseExample(example: Example): unknown[] {
  const docs = parseAllDocuments(example.text);
  const list = Array.isArray(docs) ? docs : [docs];
  const objects: unknown[] = [];
  for (const doc of list) {
    const problem = doc.errors[0];
    if (problem !== undefined) {
      throw new Error(
        `${example.file}:${example.line}: the YAML does not parse: ${problem.message}`,
      );
    }
    objects.push(doc.toJS());
  }
  return objects;
}

interface LockExample {
  namespace: string;
  name: string;
  reason: string;
}

function locksOf(objects: unknown[]): LockExample[] {
  const locks: LockExample[] = [];
  for (const object of objects) {
    if (object === null || typeof object !== "object") continue;
    const o = object as {
      kind?: unknown;
      metadata?: { name?: unknown; namespace?: unknown };
      spec?: { reason?: unknown };
    };
    if (o.kind !== "Lock") continue;
    locks.push({
      namespace: String(o.metadata?.namespace ?? ""),
      name: String(o.metadata?.name ?? ""),
      reason: String(o.spec?.reason ?? ""),
    });
  }
  return locks;
}

/** The denials a text quotes: `locked by Lock <ns>/<name> ("<reason>")`. */
function quotedLockDenials(
  markdown: string,
): { lock: string; reason: string }[] {
  return [
    ...markdown.replace(/\s*\n\s*/g, " ").matchAll(
      /locked by Lock ([a-z0-9-]+\/[a-z0-9-]+) \("([^"]*)"\)/g,
    ),
  ].map((m) => ({ lock: m[1]!, reason: m[2]! }));
}

/** The backticked reasons in the `reason` column of each Markdown table. */
function reasonTables(
  markdown: string,
): { line: number; reasons: string[] }[] {
  const lines = markdown.split("\n");
  const tables: { line: number; reasons: string[] }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const cells = (l: string) => l.split("|").slice(1, -1).map((c) => c.trim());
    if (!/^\|/.test(lines[i]!) || !/^\|[\s|:-]+\|$/.test(lines[i + 1] ?? "")) {
      continue;
    }
    const column = cells(lines[i]!).findIndex((c) =>
      c.toLowerCase() === "reason"
    );
    let j = i + 2;
    const reasons: string[] = [];
    while (j < lines.length && /^\|/.test(lines[j]!)) {
      if (column !== -1) {
        for (
          const m of (cells(lines[j]!)[column] ?? "").matchAll(/`([A-Za-z]+)`/g)
        ) {
          reasons.push(m[1]!);
        }
      }
      j++;
    }
    if (column !== -1) tables.push({ line: i + 1, reasons });
    i = j;
  }
  return tables;
}

Deno.test("every YAML example in the docs parses", async () => {
  let count = 0;
  for (const file of await markdownFiles()) {
    const markdown = await Deno.readTextFile(new URL(file, ROOT));
    for (const example of yamlExamples(file, markdown)) {
      parseExample(example);
      count++;
    }
  }
  assert.ok(count > 20, `found only ${count} YAML examples`);
});

Deno.test("a Lock's reason, as YAML parses it, is the one its quoted denial shows", async () => {
  let checked = 0;
  for (const file of await markdownFiles()) {
    const markdown = await Deno.readTextFile(new URL(file, ROOT));
    const locks = yamlExamples(file, markdown).flatMap((e) =>
      locksOf(parseExample(e))
    );
    for (const denial of quotedLockDenials(markdown)) {
      const lock = locks.find((l) =>
        `${l.namespace}/${l.name}` === denial.lock
      );
      assert.ok(
        lock,
        `${file} quotes a denial by ${denial.lock}, a Lock it does not show`,
      );
      assert.equal(
        lock.reason,
        denial.reason,
        `${file}: the Lock ${denial.lock} parses to reason "${lock.reason}", but the text promises "${denial.reason}" (quote a reason holding '#' or ': ')`,
      );
      checked++;
    }
  }
  assert.ok(checked > 0, "no quoted Lock denial checked");
});

Deno.test("the unquoted '#' of a Lock reason is caught", () => {
  const markdown = [
    "```yaml",
    "kind: Lock",
    "metadata: { name: prod, namespace: team-a }",
    "spec:",
    "  reason: production subnet, ask #netops",
    "```",
    'denied with `locked by Lock team-a/prod ("production subnet, ask #netops")`',
  ].join("\n");
  const [lock] = locksOf(parseExample(yamlExamples("x.md", markdown)[0]!));
  const [denial] = quotedLockDenials(markdown);
  assert.equal(lock?.reason, "production subnet, ask");
  assert.notEqual(lock?.reason, denial?.reason);
});

Deno.test("every table of status reasons lists only reasons the code writes, and all it is about", async () => {
  const rule = new Set<string>(CONDITION_REASONS);
  const lock = new Set<string>(LOCK_CONDITION_REASONS);
  let checked = 0;
  for (const file of await markdownFiles()) {
    const markdown = await Deno.readTextFile(new URL(file, ROOT));
    for (const { line, reasons } of reasonTables(markdown)) {
      if (reasons.length === 0) continue;
      const where = `${file}:${line}`;
      const unknown = reasons.filter((r) => !rule.has(r) && !lock.has(r));
      assert.deepEqual(
        unknown,
        [],
        `${where} lists reasons the code never writes`,
      );
      // A table about rules lists every reason a rule can show when not
      // Ready (Enforced and Installed may be left to the text).
      const aboutRules = reasons.filter((r) => rule.has(r) && !lock.has(r));
      const about = aboutRules.length > 0 ? rule : lock;
      const missing = [...about].filter((r) =>
        r !== "Enforced" && r !== "Installed" && !reasons.includes(r)
      );
      assert.deepEqual(
        missing,
        [],
        `${where} does not list ${missing.join(", ")}`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 2, `only ${checked} reason tables checked`);
});
