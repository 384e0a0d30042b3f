/**
 * The DependencyRule API (`dependencies.opendefense.cloud/v1alpha1`): names
 * and annotations, a zod schema that mirrors the reference implementation's
 * validation, and {@linkcode parseDependencyRule}, which turns an untrusted
 * value into a typed rule or a readable list of problems.
 *
 * DependencyRules are cluster-scoped: a rule is identified by its kcp logical
 * cluster and its name (see {@linkcode ruleKey}).
 *
 * @example Usage
 * ```ts
 * import { parseDependencyRule } from "./api.ts";
 *
 * const result = parseDependencyRule({ apiVersion: "v1", kind: "Pod" });
 * if (!result.ok) console.error(result.error);
 * ```
 *
 * @module
 */

import { z } from "zod";
import { parseFieldPath } from "./field_path.ts";
import { isWorkspacePath } from "./kcp.ts";

/** API group of DependencyRule. */
export const GROUP = "dependencies.opendefense.cloud";
/** API version of DependencyRule within {@linkcode GROUP}. */
export const VERSION = "v1alpha1";
/** The `apiVersion` of a DependencyRule object: `<group>/<version>`. */
export const API_VERSION = "dependencies.opendefense.cloud/v1alpha1";
/** The `kind` of a DependencyRule object. */
export const KIND = "DependencyRule";
/** The `kind` of a list of DependencyRules. */
export const LIST_KIND = "DependencyRuleList";
/** Plural resource name of DependencyRule, as used in URLs. */
export const PLURAL = "dependencyrules";
/** Singular resource name of DependencyRule. */
export const SINGULAR = "dependencyrule";
/** Default name of the APIExport that serves DependencyRules. */
export const DEFAULT_API_EXPORT_NAME = "dependencies.opendefense.cloud";
/**
 * Annotation that, set to exactly `"true"` on an object being deleted, lets
 * the DELETE through despite dependents that still refer to it.
 */
export const SKIP_PROTECTION_ANNOTATION =
  "dependencies.opendefense.cloud/skip-protection";
/** Annotation in which kcp records the logical cluster of an object. */
export const CLUSTER_ANNOTATION = "kcp.io/cluster";

const DNS_SUBDOMAIN_MAX = 253;
const DNS_LABEL_MAX = 63;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const VERSION_PATTERN = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const KIND_MAX = 63;
const KIND_PATTERN = /^[A-Z][A-Za-z0-9]*$/;
const RESOURCE_MAX = 63;
const RESOURCE_PATTERN = /^[a-z][a-z0-9]*$/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

const dnsSubdomain = _checkedString(_dnsSubdomainProblem);
const version = _checkedString(_versionProblem);
const resource = _checkedString(_resourceProblem);

/**
 * Schema of `spec.dependent`: the type that holds references and is listed
 * when a protected object is deleted.
 */
export const DependentSchema = z.object({
  apiExportName: dnsSubdomain,
  group: dnsSubdomain,
  version,
  kind: _checkedString(_kindProblem),
  resource,
});

/** `spec.dependent`: the type that holds references, listed on DELETE. */
export type Dependent = z.infer<typeof DependentSchema>;

/**
 * Schema of one entry of `spec.dependencies`: a protected type, the APIExport
 * that provides it, and where a dependent holds its name.
 */
export const DependencySchema = z.object({
  apiExportRef: z.object({
    path: _checkedString(_workspacePathProblem),
    name: dnsSubdomain,
  }),
  group: dnsSubdomain,
  version,
  resource,
  fieldRef: z.object({
    path: _checkedString(_fieldPathProblem),
  }),
});

/** One entry of `spec.dependencies`: a protected type. */
export type Dependency = z.infer<typeof DependencySchema>;

/** Schema of the `spec` of a DependencyRule. */
export const DependencyRuleSpecSchema = z.object({
  dependent: DependentSchema,
  dependencies: z.array(DependencySchema).min(1, {
    error: "must list at least one dependency: current value is an empty list",
  }),
});

/** The `spec` of a DependencyRule. */
export type DependencyRuleSpec = z.infer<typeof DependencyRuleSpecSchema>;

/**
 * Schema of a whole DependencyRule object. Metadata fields the schema does
 * not name are kept; other unknown fields are dropped.
 */
export const DependencyRuleSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: z.looseObject({
    name: z.string().min(1, { error: "must not be empty" }),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: DependencyRuleSpecSchema,
  status: z.unknown().optional(),
});

/** A DependencyRule object, as validated by {@linkcode DependencyRuleSchema}. */
export type DependencyRule = z.infer<typeof DependencyRuleSchema>;

/**
 * The outcome of {@linkcode parseDependencyRule}: the rule, or every problem
 * found in one message.
 */
export type DependencyRuleParseResult =
  | { ok: true; rule: DependencyRule }
  | { ok: false; error: string };

/**
 * Validates an untrusted value, such as a decoded watch event, as a
 * DependencyRule. Never throws.
 *
 * @param value The value to validate.
 * @returns The typed rule, or an `error` listing every problem as
 * `<path>: <message>` joined by `; `, for example
 * `spec.dependencies[0].version: must look like v1, v1alpha1 or v2beta3: current value is 'v0'`.
 * Problems with the value itself have the path `(root)`.
 */
export function parseDependencyRule(value: unknown): DependencyRuleParseResult {
  let result: ReturnType<typeof DependencyRuleSchema.safeParse>;
  try {
    result = DependencyRuleSchema.safeParse(value, { error: _issueMessage });
  } catch (error) {
    // Only a hostile value (a throwing getter or proxy) gets here.
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `(root): cannot read value: ${detail}` };
  }
  if (result.success) return { ok: true, rule: result.data };
  const problems = result.error.issues.map((issue) =>
    `${_formatIssuePath(issue.path)}: ${issue.message}`
  );
  return { ok: false, error: problems.join("; ") };
}

/**
 * The key that identifies a DependencyRule across kcp logical clusters:
 * `<cluster>/<name>`. Rules are cluster-scoped, so no namespace is involved.
 *
 * @param cluster The logical cluster name (the `kcp.io/cluster` annotation).
 * @param name The rule's `metadata.name`.
 * @returns `<cluster>/<name>`.
 */
export function ruleKey(cluster: string, name: string): string {
  return `${cluster}/${name}`;
}

/** A string schema that reports the first problem `problemOf` finds. */
function _checkedString(
  problemOf: (value: string) => string | undefined,
): z.ZodString {
  return z.string().superRefine((value, context) => {
    const message = problemOf(value);
    if (message !== undefined) {
      context.addIssue({ code: "custom", message, input: value });
    }
  });
}

function _dnsSubdomainProblem(value: string): string | undefined {
  if (value.length > DNS_SUBDOMAIN_MAX) {
    return `must be a DNS subdomain of at most ${DNS_SUBDOMAIN_MAX} characters: current length is ${value.length}`;
  }
  const labels = value.split(".");
  if (!labels.every((label) => DNS_LABEL.test(label))) {
    return `must be a DNS subdomain (lowercase alphanumerics, '-' and '.', each dot-separated part starting and ending alphanumeric): current value is '${value}'`;
  }
  if (labels.some((label) => label.length > DNS_LABEL_MAX)) {
    return `must be a DNS subdomain whose dot-separated parts have at most ${DNS_LABEL_MAX} characters: current value is '${value}'`;
  }
  return undefined;
}

function _versionProblem(value: string): string | undefined {
  if (VERSION_PATTERN.test(value)) return undefined;
  return `must look like v1, v1alpha1 or v2beta3: current value is '${value}'`;
}

function _kindProblem(value: string): string | undefined {
  if (value.length > KIND_MAX) {
    return `must be at most ${KIND_MAX} characters: current length is ${value.length}`;
  }
  if (KIND_PATTERN.test(value)) return undefined;
  return `must start with an upper-case letter followed by letters and digits: current value is '${value}'`;
}

function _resourceProblem(value: string): string | undefined {
  if (value.length > RESOURCE_MAX) {
    return `must be at most ${RESOURCE_MAX} characters: current length is ${value.length}`;
  }
  if (RESOURCE_PATTERN.test(value)) return undefined;
  return `must be lowercase letters and digits starting with a letter: current value is '${value}'`;
}

function _workspacePathProblem(value: string): string | undefined {
  if (isWorkspacePath(value)) return undefined;
  return `must be a workspace path of lowercase segments joined by ':', such as 'root' or 'root:org-1:team-2': current value is '${value}'`;
}

function _fieldPathProblem(value: string): string | undefined {
  try {
    parseFieldPath(value);
    return undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return error.message;
    throw error;
  }
}

/** Readable messages for the issues zod raises on its own. */
function _issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.input === undefined) return "is required";
  switch (issue.code) {
    case "invalid_type":
      return `must be ${_expected(issue.expected)}: current value is ${
        _describe(issue.input)
      }`;
    case "invalid_value":
      return `must be ${
        issue.values.map((value) => _describe(value)).join(" or ")
      }: current value is ${_describe(issue.input)}`;
    default:
      return undefined;
  }
}

function _expected(expected: string): string {
  switch (expected) {
    case "object":
    case "record":
      return "an object";
    case "array":
      return "an array";
    case "int":
      return "an integer";
    default:
      return `a ${expected}`;
  }
}

function _describe(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return String(value);
}

/** `spec.dependencies[0].version`; keys that are not identifiers in brackets. */
function _formatIssuePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return "(root)";
  let text = "";
  for (const key of path) {
    if (typeof key === "number") text += `[${key}]`;
    else if (typeof key === "symbol") text += `[${String(key)}]`;
    else if (IDENTIFIER.test(key)) text += text === "" ? key : `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
  }
  return text;
}
