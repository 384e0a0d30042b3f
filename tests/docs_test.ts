/**
 * The documentation against the code: docs/operations.md names every flag
 * (with its default), every metric (with its type), every status reason and
 * the exact strings operators match on; and every relative link in
 * README.md and docs/*.md points at a file that exists.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_API_EXPORT_NAME,
  type EndpointObject,
} from "../lib/kcp/mod.ts";
import {
  CONDITION_REASONS,
  READY_CONDITION,
  SKIP_PROTECTION_ANNOTATION,
  WEBHOOKS_INSTALLED_CONDITION,
} from "../lib/rules/mod.ts";
import {
  CONTROLLER_FLAGS,
  createControllerMetrics,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  planReconcile,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_NAME,
} from "../lib/controller/mod.ts";
import {
  createWebhookMetrics,
  NOT_INITIALIZED_MESSAGE,
  WEBHOOK_FLAGS,
} from "../lib/webhook/mod.ts";
import { type FlagSpec, MetricsRegistry } from "../lib/runtime/mod.ts";
import { runCommand, SUBNETS, VIRTUAL_MACHINES, VPCS } from "../testing/mod.ts";
import { linkTargets } from "../testing/markdown_links.ts";

const ROOT = new URL("../", import.meta.url);
const OPERATIONS = new URL("docs/operations.md", ROOT);

/** The flags `<entry> --help` lists, as `--name`. */
async function helpFlags(entry: string): Promise<string[]> {
  const { code, stdout, stderr } = await runCommand(Deno.execPath(), [
    "run",
    "--allow-all",
    entry,
    "--help",
  ], { cwd: ROOT.pathname, env: { NO_COLOR: "1" } });
  assert.equal(code, 0, `${entry} --help failed:\n${stderr}`);
  const flags = [...stdout.matchAll(/^ {2}(--[a-z0-9-]+)/gm)]
    .map((m) => m[1]!);
  assert.ok(flags.length > 0, `${entry} --help lists no flags`);
  return flags;
}

/**
 * The text below the heading `### <title>` up to the next heading of the
 * same or a higher level.
 */
function h3SectionBody(markdown: string, title: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l === `### ${title}`);
  assert.notEqual(start, -1, `docs/operations.md has no "### ${title}"`);
  const end = lines.findIndex((l, i) => i > start && /^#{1,3} /.test(l));
  return lines.slice(start + 1, end === -1 ? undefined : end).join("\n");
}

/** Whether `text` has `--name` not followed by more of a flag name. */
function mentionsFlag(text: string, flag: string): boolean {
  return new RegExp(`${flag}(?![a-z0-9-])`).test(text);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

async function checkFlags(
  entry: string,
  title: string,
  specs: readonly FlagSpec[],
): Promise<void> {
  const doc = await Deno.readTextFile(OPERATIONS);
  const text = h3SectionBody(doc, title);
  const missing = (await helpFlags(entry)).filter((flag) =>
    !mentionsFlag(text, flag)
  );
  assert.deepEqual(
    missing,
    [],
    `"### ${title}" in docs/operations.md lacks ${missing.join(", ")}`,
  );
  for (const spec of specs) {
    if (spec.default === undefined) continue;
    const row = text.split("\n").find((line) =>
      new RegExp(`^\\|\\s*\`--${escapeRegExp(spec.name)}\``).test(line)
    );
    assert.ok(row, `"### ${title}" has no table row for --${spec.name}`);
    assert.ok(
      row.includes(`\`${spec.default}\``),
      `the row of --${spec.name} in "### ${title}" does not give its default \`${spec.default}\`:\n${row}`,
    );
  }
}

Deno.test("docs/operations.md lists every controller flag with its default", async () => {
  await checkFlags("controller.ts", "Controller flags", CONTROLLER_FLAGS);
});

Deno.test("docs/operations.md lists every webhook flag with its default", async () => {
  await checkFlags("webhook.ts", "Webhook flags", WEBHOOK_FLAGS);
});

Deno.test("docs/operations.md lists every metric with its type", async () => {
  const doc = await Deno.readTextFile(OPERATIONS);
  const families = new Map<string, string>();
  for (const create of [createControllerMetrics, createWebhookMetrics]) {
    const registry = new MetricsRegistry();
    create(registry).collectProcess();
    for (
      const [, name, type] of (await registry.render()).matchAll(
        /^# TYPE (\S+) (\S+)$/gm,
      )
    ) {
      families.set(name!, type!);
    }
  }
  assert.ok(families.size > 0, "the registries rendered no metric families");
  const lines = doc.split("\n");
  for (const [name, type] of families) {
    assert.ok(
      doc.includes(`\`${name}\``),
      `docs/operations.md does not name the metric \`${name}\``,
    );
    assert.ok(
      lines.some((line) =>
        line.includes(`\`${name}\``) &&
        new RegExp(`\\|\\s*${type}\\s*\\|`).test(line)
      ),
      `docs/operations.md has no table row giving \`${name}\` the type ${type}`,
    );
  }
});

/** A DependencyRule object as the controller's watch shows it. */
function watchedRule(name: string, spec: unknown): EndpointObject {
  return {
    endpoint: "https://kcp.example/services/apiexport/root:dep-ctrl/x",
    object: {
      apiVersion: "dependencies.opendefense.cloud/v1alpha1",
      kind: "DependencyRule",
      metadata: {
        name,
        generation: 1,
        resourceVersion: "1",
        annotations: { "kcp.io/cluster": "1compute" },
      },
      spec,
    } as EndpointObject["object"],
  };
}

function dependencyAt(
  target: { group: string; version: string; resource: string },
  path: string,
): Record<string, unknown> {
  const { group, version, resource } = target;
  return {
    apiExportRef: { path, name: group },
    group,
    version,
    resource,
    fieldRef: { path: ".spec.ref.name" },
  };
}

Deno.test("CONDITION_REASONS includes every reason a real plan writes", () => {
  const known = new Set<string>(CONDITION_REASONS);
  const dependent = {
    apiExportName: "compute.example.com",
    ...VIRTUAL_MACHINES,
  };
  const plan = planReconcile({
    rules: [
      watchedRule("invalid", {}),
      watchedRule("self", {
        dependent,
        dependencies: [dependencyAt(VIRTUAL_MACHINES, "root:network")],
      }),
      watchedRule("unresolved", {
        dependent,
        dependencies: [dependencyAt(VPCS, "root:network")],
      }),
      watchedRule("unbound", {
        dependent,
        dependencies: [dependencyAt(SUBNETS, "root:storage")],
      }),
    ],
    bindings: [],
    configurations: [],
    resolutions: new Map([
      ["root:network", {
        reason: "Forbidden",
        message: "forbidden",
        definitive: false,
      }],
      ["root:storage", { cluster: "2storage" }],
    ]),
    settings: {
      url: "https://webhook.example/validate",
      caBundle: "LS0t",
      timeoutSeconds: 10,
    },
    installErrors: new Map(),
    exportRef: "root:dep-ctrl:dependencies.opendefense.cloud",
    now: "2026-01-01T00:00:00Z",
  });
  const written = new Set(
    plan.statuses.flatMap((s) =>
      (s.status.conditions ?? []).map((c) => c.reason)
    ),
  );
  assert.equal(written.size, 4, `unexpected reasons: ${[...written]}`);
  for (const reason of written) {
    assert.ok(
      known.has(reason),
      `the plan wrote reason ${reason}, which CONDITION_REASONS lacks (${[
        ...known,
      ]})`,
    );
  }
});

Deno.test("docs/operations.md explains every status reason the controller sets", async () => {
  const doc = await Deno.readTextFile(OPERATIONS);
  const missing = CONDITION_REASONS.filter((reason) =>
    !doc.includes(`\`${reason}\``)
  );
  assert.deepEqual(
    missing,
    [],
    `docs/operations.md does not explain the reasons ${missing.join(", ")}`,
  );
  for (const condition of [READY_CONDITION, WEBHOOKS_INSTALLED_CONDITION]) {
    assert.ok(
      doc.includes(`\`${condition}\``),
      `docs/operations.md does not name the condition ${condition}`,
    );
  }
});

Deno.test("docs/operations.md quotes the exact names and messages operators match on", async () => {
  const doc = (await Deno.readTextFile(OPERATIONS)).replace(/\n\s*/g, " ");
  for (
    const text of [
      SKIP_PROTECTION_ANNOTATION,
      NOT_INITIALIZED_MESSAGE,
      WEBHOOK_CONFIGURATION_NAME,
      WEBHOOK_NAME,
      `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
      DEFAULT_API_EXPORT_NAME,
    ]
  ) {
    assert.ok(doc.includes(text), `docs/operations.md does not quote ${text}`);
  }
});

/** Whether a file exists; errors other than its absence are thrown. */
async function fileExists(url: URL): Promise<boolean> {
  try {
    await Deno.stat(url);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

Deno.test("every relative link in README.md and docs/*.md points at an existing file", async () => {
  const files = [new URL("README.md", ROOT)];
  for await (const entry of Deno.readDir(new URL("docs/", ROOT))) {
    if (entry.isFile && entry.name.endsWith(".md")) {
      files.push(new URL(`docs/${entry.name}`, ROOT));
    }
  }
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const markdown = await Deno.readTextFile(file);
    for (const target of linkTargets(markdown)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) {
        continue;
      }
      const path = decodeURIComponent(target.replace(/[?#].*$/, ""));
      const resolved = path.startsWith("/")
        ? new URL(`.${path}`, ROOT)
        : new URL(path, file);
      checked++;
      if (!(await fileExists(resolved))) {
        broken.push(
          `${file.pathname.slice(ROOT.pathname.length)}: ${target}`,
        );
      }
    }
  }
  assert.ok(checked > 0, "found no relative link to check");
  assert.deepEqual(broken, [], `links to missing files:\n${broken.join("\n")}`);
});
