/**
 * The examples in the documentation against what they promise: every YAML a
 * reader may copy (```yaml blocks, and heredocs fed to `kubectl apply -f -`
 * in ```sh blocks) parses; a Lock's parsed `reason` is the one the text says
 * its denial shows; every table of status reasons lists only reasons
 * the code writes, and all of those the table is about; the plain `kcp
 * start` path of getting-started starts both components with flags they
 * take, on distinct ports, reading only files it makes, and the sections
 * it sends the operator to exist and end in the rule Enforced and a denied
 * delete (`tests/e2e/operator_path_test.ts` runs them on kcp); and each
 * kubectl check the guide runs as a component asks what the shipped RBAC
 * grants.
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

/** The text of the `## <heading>` section, up to the next `## `. */
function h2Section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `no section "## ${heading}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  return markdown.slice(start, end < 0 ? undefined : end);
}

/** The commands of the ```sh blocks, continuation lines joined. */
function shellCommands(markdown: string): string[] {
  const commands: string[] = [];
  for (
    const [, indent, body] of markdown.matchAll(
      /^([ \t]*)```sh\n([\s\S]*?)^\1```/gm,
    )
  ) {
    const text = body!.split("\n").map((l) => l.slice(indent!.length))
      .join("\n").replace(/\\\n\s*/g, " ");
    for (const line of text.split("\n")) {
      const command = line.replace(/(^|\s)#.*$/, "").trim();
      if (command !== "") commands.push(command);
    }
  }
  return commands;
}

/** Shell words, quotes removed (no expansion). */
function shellWords(command: string): string[] {
  return [...command.matchAll(/(?:'[^']*'|"[^"]*"|[^\s'"])+/g)].map(([w]) =>
    w.replace(/'([^']*)'|"([^"]*)"/g, "$1$2")
  );
}

/** What a `deno run` command of the plain path starts. */
interface Started {
  script: string;
  args: string[];
}

const GETTING_STARTED = "docs/getting-started.md";
const PLAIN_PATH = "On a plain `kcp start`, with tokens";

Deno.test("the plain kcp start path starts both components with flags they take, on distinct ports, reading files it makes", async () => {
  const { parseControllerOptions } = await import("../lib/controller/mod.ts");
  const { parseWebhookOptions } = await import("../lib/webhook/mod.ts");
  const { GRANTS_COMMAND, parseGrantsOptions } = await import(
    "../lib/grants/mod.ts"
  );
  const text = h2Section(
    await Deno.readTextFile(new URL(GETTING_STARTED, ROOT)),
    PLAIN_PATH,
  );
  // Variables the section sets (HOST=localhost) stand for their value.
  const set = new Map<string, string>();
  for (const [, name, value] of text.matchAll(/^\s*([A-Z_]+)=(\S+)$/gm)) {
    set.set(name!, value!);
  }
  const commands = shellCommands(text).map((command) =>
    shellWords(
      command.replace(/\$([A-Z_]+)/g, (v, name) => set.get(name) ?? v),
    ).filter((w) => w !== "&")
  );
  const made = new Set<string>();
  for (const words of commands) {
    words.forEach((w, i) => {
      if (w === "-out" || w === "-keyout" || w === ">") made.add(words[i + 1]!);
    });
  }
  const started: Started[] = [];
  let grants = 0;
  for (const words of commands.filter((w) => w[0] === "deno")) {
    assert.equal(words[1], "run", words.join(" "));
    const at = words.findIndex((w) => w.endsWith(".ts"));
    for (const flag of words.slice(2, at)) {
      assert.match(flag, /^--allow-(net|read|env)$/, words.join(" "));
    }
    if (words[at] === "controller.ts" && words[at + 1] === GRANTS_COMMAND) {
      const args = words.slice(at + 2);
      const out = args.indexOf(">");
      const parsed = parseGrantsOptions(out < 0 ? args : args.slice(0, out));
      assert.ok(!parsed.help);
      assert.equal(parsed.options.kubeconfig, "webhook.kubeconfig");
      grants++;
      continue;
    }
    started.push({ script: words[at]!, args: words.slice(at + 1) });
  }
  assert.equal(grants, 1, "the section prints the webhook's reads once");
  assert.deepEqual(started.map((s) => s.script).sort(), [
    "controller.ts",
    "webhook.ts",
  ]);
  const ports = new Map<number, string>();
  const reads: string[] = [];
  const noEnv = { env: () => undefined };
  for (const { script, args } of started) {
    await Deno.stat(new URL(script, ROOT));
    const parsed = script === "webhook.ts"
      ? parseWebhookOptions(args, noEnv)
      : parseControllerOptions(args, noEnv);
    assert.ok(!parsed.help);
    const o = parsed.options;
    const binds = [
      o.healthBind,
      o.metricsBind,
      "webhookBind" in o ? o.webhookBind : undefined,
    ];
    for (const bind of binds) {
      if (bind === undefined || bind.port === 0) continue;
      const other = ports.get(bind.port);
      assert.equal(
        other,
        undefined,
        `${script} and ${other} share :${bind.port}`,
      );
      ports.set(bind.port, script);
    }
    reads.push(o.kubeconfig);
    if ("tlsCertDir" in o) {
      reads.push(`${o.tlsCertDir}/tls.crt`, `${o.tlsCertDir}/tls.key`);
    }
    if ("webhookCaBundlePath" in o) reads.push(o.webhookCaBundlePath);
  }
  for (const file of reads) {
    // The kubeconfigs are step 2's; everything else a command above makes.
    if (file.endsWith(".kubeconfig")) continue;
    assert.ok(made.has(file), `nothing in the section makes ${file}`);
  }
});

Deno.test("the plain kcp start path names sections that exist and ends where the guide does", async () => {
  const { leaveOutReason, operatorPath } = await import(
    "../testing/doc_shell.ts"
  );
  const path = operatorPath(
    await Deno.readTextFile(new URL(GETTING_STARTED, ROOT)),
    PLAIN_PATH,
  );
  const runs = path.flatMap((i) => i.kind === "run" ? [i] : []);
  for (const item of runs.filter((i) => i.from === PLAIN_PATH)) {
    assert.equal(
      leaveOutReason(item.block.text),
      undefined,
      `line ${item.block.line}: the section's own commands run as written`,
    );
  }
  const from = new Set(path.map((i) => i.from));
  for (
    const step of [
      "Names used in this guide",
      "2. The dep-ctrl workspace",
      "3. system:admin of every shard",
      "4. workspace-reader in root and every parent",
      "6. A provider and a rule",
      "7. The rule's status",
      "8. Try it",
      // Step 8's examples, under it.
      "References in lists and in other namespaces",
      "A Lock with a reason",
    ]
  ) assert.ok(from.has(step), `the path runs nothing of "${step}"`);
  assert.ok(
    runs.some((i) => /\bReady\s+True\s+Enforced\b/.test(i.expected ?? "")),
  );
  assert.ok(
    runs.some((i) =>
      i.mustFail && /still referenced by VirtualMachine/.test(i.expected ?? "")
    ),
  );
  assert.ok(
    path.some((i) => i.kind === "save" && i.file === "dep-ctrl-binding.yaml"),
  );
});

/** kubectl's names for the resources the guide reads as a component. */
const RESOURCES: Record<string, [group: string, resource: string]> = {
  apiexportendpointslice: ["apis.kcp.io", "apiexportendpointslices"],
  logicalcluster: ["core.kcp.io", "logicalclusters"],
  workspace: ["tenancy.kcp.io", "workspaces"],
  namespace: ["", "namespaces"],
  ns: ["", "namespaces"],
};

/** The RBAC the guide applies where a workspace path points. */
function manifestsFor(workspace: string): string[] {
  const dirs = ["manifests/kcp/system-admin"];
  if (workspace === "root:dep-ctrl") dirs.push("manifests/kcp/dep-ctrl");
  if (workspace === "root" || workspace === "root:providers") {
    dirs.push("manifests/kcp/workspace-reader");
  }
  return dirs;
}

/** One rule of a ClusterRole. */
interface RbacRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
}

/** Whether the YAML in `dirs` lets `user` make `verb` on one resource. */
async function granted(
  dirs: string[],
  ask: {
    user: string;
    verb: string;
    group: string;
    resource: string;
    name?: string;
  },
): Promise<boolean> {
  const roles = new Map<string, RbacRule[]>();
  const bound: string[] = [];
  for (const dir of dirs) {
    for await (const entry of Deno.readDir(new URL(`${dir}/`, ROOT))) {
      if (!entry.isFile || entry.name === "kustomization.yaml") continue;
      const text = await Deno.readTextFile(
        new URL(`${dir}/${entry.name}`, ROOT),
      );
      for (const doc of parseAllDocuments(text)) {
        const o = doc.toJS() as {
          kind?: string;
          metadata?: { name?: string };
          rules?: RbacRule[];
          roleRef?: { name?: string };
          subjects?: { kind?: string; name?: string }[];
        } | null;
        if (o?.kind === "ClusterRole") {
          roles.set(o.metadata!.name!, o.rules ?? []);
        }
        if (
          o?.kind === "ClusterRoleBinding" &&
          o.subjects?.some((s) => s.kind === "User" && s.name === ask.user)
        ) bound.push(o.roleRef!.name!);
      }
    }
  }
  return bound.flatMap((r) => roles.get(r) ?? []).some((rule) =>
    (rule.apiGroups ?? []).some((g) => g === ask.group || g === "*") &&
    (rule.resources ?? []).some((r) => r === ask.resource || r === "*") &&
    (rule.verbs ?? []).some((v) => v === ask.verb || v === "*") &&
    (rule.resourceNames === undefined ||
      (ask.name !== undefined && rule.resourceNames.includes(ask.name)))
  );
}

Deno.test("every kubectl check the getting-started guide runs as a component asks what the shipped RBAC grants", async () => {
  const markdown = await Deno.readTextFile(new URL(GETTING_STARTED, ROOT));
  let checked = 0;
  for (const words of shellCommands(markdown).map(shellWords)) {
    if (words[0] !== "kubectl") continue;
    const at = words.indexOf("--kubeconfig");
    const user = /^(controller|webhook)\.kubeconfig$/.exec(words[at + 1] ?? "")
      ?.[1];
    const get = words.indexOf("get");
    if (at < 0 || user === undefined || get < 0) continue;
    const server = words[words.indexOf("--server") + 1];
    const workspace = words.includes("--server")
      ? /\/clusters\/([^/]+)$/.exec(server!)![1]!
      : "root:dep-ctrl";
    const kind = words[get + 1]!.replace(/s$/, "");
    const name = words[get + 2]?.startsWith("-") ? undefined : words[get + 2];
    const type = RESOURCES[kind];
    assert.ok(type, `add ${kind} to RESOURCES: ${words.join(" ")}`);
    const ask = {
      user: `dependency-${user}`,
      verb: name === undefined ? "list" : "get",
      group: type[0],
      resource: type[1],
      ...(name === undefined ? {} : { name }),
    };
    assert.ok(
      await granted(manifestsFor(workspace), ask),
      `${
        words.join(" ")
      }: ${ask.user} may not ${ask.verb} ${ask.resource} in ${workspace}`,
    );
    checked++;
  }
  assert.ok(checked >= 4, `only ${checked} checks found`);
});
