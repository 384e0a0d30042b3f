/**
 * `kubectl dependencies why`: what holds an object, as the dependency
 * webhook says in its answer to a dry-run delete sent as the user
 * ({@linkcode whyCommand}); with `--recursive`, what holds each of those in
 * turn.
 *
 * ```sh
 * kubectl dependencies why vpc/core -n team-a
 * kubectl dependencies why subnets.network.example.com s-1 --recursive -o json
 * kubectl dependencies why namespace/team-a
 * kubectl dependencies why workspace -o json
 * ```
 *
 * `why namespace/<ns>` and `why workspace` ask about every object of the
 * namespace or workspace (`why_scope.ts`).
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { CauseObject } from "../causes/mod.ts";
import { errorText, printable } from "../runtime/mod.ts";
import {
  EXIT_ERROR,
  EXIT_HELD,
  EXIT_OK,
  type PluginContext,
  PluginError,
} from "./context.ts";
import { resolveType, workspaceOf } from "./discovery.ts";
import { type HttpAnswer, objectUrl } from "./dry_run.ts";
import { decide } from "./why_decision.ts";
import { withObjectDeletions } from "./why_owners.ts";
import { renderWhy, WHY_OUTPUTS, type WhyOutput } from "./why_render.ts";
import {
  DEFAULT_MAX_HELD,
  DEFAULT_MAX_OBJECTS,
  type WhyScope,
  whyScope,
} from "./why_scope.ts";
import { renderScope } from "./why_scope_render.ts";
import {
  type Ask,
  MAX_WALK_OBJECTS,
  WALK_CONCURRENCY,
  walkWhy,
} from "./why_walk.ts";

/** `kubectl dependencies why --help`. */
export const WHY_USAGE = `Usage: kubectl dependencies why <type>/<name> [flags]
       kubectl dependencies why <type> <name> [flags]
       kubectl dependencies why namespace/<ns> [flags]
       kubectl dependencies why workspace [flags]

Says what holds an object: the objects that refer to it (with the fields that
refer and the rules), the owners it names that hold it (with the field that
names them and the rule's "when" that is true), and the Locks that hold it
(with their reasons). It asks the API server for a dry-run delete, as you:
nothing is deleted, and it takes your own permission to delete the object.

For a namespace (or the workspace) it asks the same about every object in it
of the types the workspace binds or defines, and names those held, with how
long the namespace (or workspace) has been being deleted.

For an object held, it also says since when the object is being deleted, and
which of its owners are being deleted and since when: an owner deleted in the
foreground waits for the objects it owns, a held one too.

Flags:
  -R, --recursive        Ask the same about each object that holds it, in turn,
                         as a tree: a repeated object is marked (see above), one
                         on its own path (cycle); at most ${MAX_WALK_OBJECTS} objects
  -o, --output <format>  tree (default), json, yaml or dot (Graphviz)
  -n, --namespace <ns>   The object's namespace
      --max-objects <n>  For a namespace or workspace: ask about at most n
                         objects (default ${DEFAULT_MAX_OBJECTS})
      --max-held <n>     For a namespace or workspace: name at most n held
                         objects, count the rest (default ${DEFAULT_MAX_HELD})

Exit codes: 0 nothing holds it (a delete would go through), 1 something holds
it or it cannot be deleted now for another reason (the message says which),
2 it could not be asked (no such type or object, no permission to delete it,
a kubeconfig or connection error; for a namespace or workspace, nothing held
among the objects asked about but some not asked).
`;

/** The parsed arguments of `why`. */
export interface WhyArgs {
  /** The type, as typed (`vpc`, `vpcs.network.example.com`). */
  type: string;
  /** The object's name. */
  name: string;
  /** `--recursive`. */
  recursive: boolean;
  /** `-o`. */
  output: WhyOutput;
  /** Set for `namespace/<ns>` and `workspace`: every object in it. */
  scope?: WhyScope;
  /** `--max-objects`, when given. */
  maxObjects?: number;
  /** `--max-held`, when given. */
  maxHeld?: number;
}

/** Options for {@linkcode whyCommand}. */
export interface WhyCommandOptions {
  /** Sends a dry-run DELETE to an object's URL, as the user, and returns the answer. */
  dryRun: (url: string) => Promise<HttpAnswer>;
  /** The most objects a recursive walk asks about. @default {MAX_WALK_OBJECTS} */
  limit?: number;
  /** Questions in flight at once. @default {WALK_CONCURRENCY} */
  concurrency?: number;
}

/**
 * Parses the arguments of `why` (after the command name, without the
 * kubeconfig flags).
 *
 * @throws {PluginError} With exit code 2 on a usage error.
 */
export function parseWhyArgs(
  args: readonly string[],
): WhyArgs | { help: true } {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: {
        recursive: { type: "boolean", short: "R" },
        output: { type: "string", short: "o" },
        "max-objects": { type: "string" },
        "max-held": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new PluginError(`why: ${errorText(error)} (see --help)`);
  }
  const { values, positionals } = parsed;
  if (values.help === true) return { help: true };
  const output = values.output ?? "tree";
  if (!(WHY_OUTPUTS as readonly string[]).includes(output)) {
    throw new PluginError(
      `why: -o must be one of ${WHY_OUTPUTS.join(", ")}: current value is '${
        printable(output)
      }'`,
    );
  }
  const object = objectArgument(positionals);
  const scope = scopeOf(object);
  if (scope !== undefined && values.recursive === true) {
    throw new PluginError(
      "why: --recursive is for one object, not a namespace or workspace (see --help)",
    );
  }
  return {
    ...object,
    recursive: values.recursive === true,
    output: output as WhyOutput,
    ...(scope === undefined ? {} : { scope }),
    ...countFlag("max-objects", values["max-objects"], 100_000),
    ...countFlag("max-held", values["max-held"], 10_000),
  };
}

/** `namespace/<ns>` (or `ns`, `namespaces`) and `workspace`: a scope; else none. */
function scopeOf(object: { type: string; name: string }): WhyScope | undefined {
  if (object.type === "" && object.name === "workspace") {
    return { kind: "workspace" };
  }
  const type = object.type.toLowerCase();
  return type === "namespace" || type === "namespaces" || type === "ns"
    ? { kind: "namespace", name: object.name }
    : undefined;
}

/** `{ maxObjects }` or `{ maxHeld }` of a whole number flag from 1 to `max`; `{}` when absent. */
function countFlag(
  name: "max-objects" | "max-held",
  value: string | undefined,
  max: number,
): { maxObjects?: number; maxHeld?: number } {
  if (value === undefined) return {};
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > max) {
    throw new PluginError(
      `why: --${name} must be a whole number from 1 to ${max}: current value is '${
        printable(value)
      }'`,
    );
  }
  return name === "max-objects" ? { maxObjects: n } : { maxHeld: n };
}

/** `<type>/<name>`, or `<type> <name>` as kubectl also takes it. */
function objectArgument(positionals: readonly string[]): {
  type: string;
  name: string;
} {
  const usage = "want <type>/<name> or <type> <name> (see --help)";
  if (positionals.length === 1 && positionals[0] === "workspace") {
    return { type: "", name: "workspace" };
  }
  if (positionals.length === 1) {
    const [argument] = positionals as [string];
    const slash = argument.indexOf("/");
    const type = argument.slice(0, slash);
    const name = argument.slice(slash + 1);
    if (slash > 0 && name !== "" && !name.includes("/")) return { type, name };
    throw new PluginError(
      `why: cannot read '${printable(argument)}': ${usage}`,
    );
  }
  if (positionals.length === 2) {
    const [type, name] = positionals as [string, string];
    if (
      type !== "" && name !== "" && !type.includes("/") && !name.includes("/")
    ) {
      return { type, name };
    }
    throw new PluginError(
      `why: cannot read '${printable(type)} ${printable(name)}': ${usage}`,
    );
  }
  throw new PluginError(
    positionals.length === 0
      ? `why: which object? ${usage}`
      : `why: one object at a time: ${usage}`,
  );
}

/**
 * Runs `kubectl dependencies why` with its arguments (after the command
 * name, without the kubeconfig flags), writes the answer to stdout in the
 * format asked, and returns the exit code: 0 nothing holds the object, 1
 * something holds it or it cannot be deleted now.
 *
 * @throws {PluginError} With exit code 2 on a usage error, an unknown type,
 * a missing object, no permission to delete it, or no answer.
 */
export async function whyCommand(
  args: readonly string[],
  context: PluginContext,
  options: WhyCommandOptions,
): Promise<number> {
  const parsed = parseWhyArgs(args);
  if ("help" in parsed) {
    context.io.out(WHY_USAGE);
    return EXIT_OK;
  }
  if (parsed.scope !== undefined) {
    const report = await whyScope(context, parsed.scope, {
      dryRun: options.dryRun,
      maxObjects: parsed.maxObjects ?? DEFAULT_MAX_OBJECTS,
      maxHeld: parsed.maxHeld ?? DEFAULT_MAX_HELD,
      ...(options.concurrency === undefined
        ? {}
        : { concurrency: options.concurrency }),
    });
    context.io.out(renderScope(report, parsed.output, {
      color: context.io.color,
      now: Date.now(),
      maxObjects: parsed.maxObjects ?? DEFAULT_MAX_OBJECTS,
    }));
    return report.state === "held"
      ? EXIT_HELD
      : report.state === "free"
      ? EXIT_OK
      : EXIT_ERROR;
  }
  const type = await resolveType(context, parsed.type);
  const root: CauseObject = {
    group: type.group,
    version: type.version,
    resource: type.resource,
    kind: type.kind,
    namespace: type.namespaced ? context.namespace : "",
    name: parsed.name,
  };
  const workspace = workspaceOf(context.server);
  const ask: Ask = async (object) => {
    let url: string;
    try {
      url = objectUrl(context.server, object);
    } catch (error) {
      return { state: "error", message: errorText(error) };
    }
    return decide(await options.dryRun(url), object, { workspace });
  };
  const limit = options.limit ?? MAX_WALK_OBJECTS;
  const node = await walkWhy(root, ask, {
    recursive: parsed.recursive,
    limit,
    concurrency: options.concurrency ?? WALK_CONCURRENCY,
  });
  if (node.state === "error") throw new PluginError(node.error ?? "failed");
  // Held: since when it is being deleted, and whether an owner waits for it.
  const shown = node.held === true
    ? await withObjectDeletions(context, node)
    : node;
  context.io.out(
    renderWhy(shown, parsed.output, {
      color: context.io.color,
      limit,
      now: Date.now(),
    }),
  );
  return node.held === true ? EXIT_HELD : EXIT_OK;
}
