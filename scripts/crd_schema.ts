/**
 * The kcp APIResourceSchema of DependencyRule, generated from the zod schemas
 * in `api.ts`, which stay the single source of truth for its validation.
 * `deno task schema` writes it to `manifests/kcp/dep-ctrl/` (see
 * `scripts/gen_schema.ts`).
 *
 * The OpenAPI comes from `z.toJSONSchema`, then is turned into a Kubernetes
 * structural schema: only the keywords Kubernetes knows are kept, `$schema`
 * and `additionalProperties: false` are dropped, integers become `int64`
 * without zod's safe-integer bounds, and a `date-time` string keeps its
 * `format` but not zod's pattern. Anything else zod might emit, such as
 * `$ref` or `anyOf`, is an error rather than a silent change.
 *
 * An APIResourceSchema cannot be changed once created, so its name carries a
 * hash of its spec: `v1alpha1-<hash>.dependencyrules.dependencies.opendefense.cloud`.
 *
 * @example Usage
 * ```ts
 * import { apiResourceSchema, apiResourceSchemaYaml } from "./crd_schema.ts";
 *
 * console.log(apiResourceSchema().metadata.name);
 * await Deno.writeTextFile("apiresourceschema.yaml", apiResourceSchemaYaml());
 * ```
 *
 * @module
 */

import { createHash } from "node:crypto";
import { dumpYaml } from "@kubernetes/client-node";
import { z } from "zod";
import {
  CONDITION_REASONS,
  DependencyRuleSchema,
  DependencyRuleStatusSchema,
  GROUP,
  KIND,
  LIST_KIND,
  PLURAL,
  READY_CONDITION,
  SINGULAR,
  VERSION,
} from "../lib/rules/mod.ts";
import { isRecord } from "../lib/runtime/mod.ts";

/** Where `deno task schema` writes the APIResourceSchema. */
export const API_RESOURCE_SCHEMA_FILE: URL = new URL(
  "../manifests/kcp/dep-ctrl/apiresourceschema.yaml",
  import.meta.url,
);
/** The APIExport manifest whose `schema:` line names the APIResourceSchema. */
export const API_EXPORT_FILE: URL = new URL(
  "../manifests/kcp/dep-ctrl/apiexport.yaml",
  import.meta.url,
);

/** A node of a Kubernetes structural OpenAPI v3 schema. */
export interface OpenApiSchema {
  /** The JSON type of the value; set on every node. */
  type: "object" | "array" | "string" | "integer" | "number" | "boolean";
  /** What the value means. */
  description?: string;
  /** The fields of an object. */
  properties?: Record<string, OpenApiSchema>;
  /** The fields an object must have. */
  required?: string[];
  /** The schema of each item of an array. */
  items?: OpenApiSchema;
  /** The least number of items of an array. */
  minItems?: number;
  /** The greatest number of items of an array. */
  maxItems?: number;
  /** The least length of a string. */
  minLength?: number;
  /** The greatest length of a string. */
  maxLength?: number;
  /** A regular expression a string must match. */
  pattern?: string;
  /** A named string or number format, such as `date-time` or `int64`. */
  format?: string;
  /** The values the value must be one of. */
  enum?: (string | number | boolean)[];
  /** The least value of a number. */
  minimum?: number;
  /** The greatest value of a number. */
  maximum?: number;
  /** `map` for a list keyed by {@linkcode OpenApiSchema["x-kubernetes-list-map-keys"]}. */
  "x-kubernetes-list-type"?: string;
  /** The fields that identify an item of a `map` list. */
  "x-kubernetes-list-map-keys"?: string[];
  /** Keep fields the schema does not name instead of pruning them. */
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

/** An additional printer column of an APIResourceSchema version. */
export interface PrinterColumn {
  /** The column heading. */
  name: string;
  /** The OpenAPI type of the column, such as `string` or `date`. */
  type: string;
  /** The JSONPath of the value, relative to the object. */
  jsonPath: string;
  /** What the column shows. */
  description?: string;
}

/** A kcp `apis.kcp.io/v1alpha1` APIResourceSchema with one version. */
export interface APIResourceSchema {
  /** Always `apis.kcp.io/v1alpha1`. */
  apiVersion: "apis.kcp.io/v1alpha1";
  /** Always `APIResourceSchema`. */
  kind: "APIResourceSchema";
  /** The name, `<version>-<hash>.<plural>.<group>`. */
  metadata: { name: string };
  /** The resource's group, names, scope and versions. */
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
    };
    scope: "Cluster" | "Namespaced";
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema: OpenApiSchema;
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
    }[];
  };
}

type DumpOptions = NonNullable<Parameters<typeof dumpYaml>[1]>;

const KNOWN_KEYWORDS: ReadonlySet<string> = new Set([
  "type",
  "description",
  "properties",
  "required",
  "items",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "enum",
  "minimum",
  "maximum",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-preserve-unknown-fields",
]);
const TYPES: ReadonlySet<string> = new Set([
  "object",
  "array",
  "string",
  "integer",
  "number",
  "boolean",
]);

/**
 * Builds the APIResourceSchema of DependencyRule from the zod schemas in
 * `api.ts`.
 *
 * @returns The APIResourceSchema, named after a hash of its spec.
 * @throws {TypeError} If a zod schema cannot be expressed as a structural
 * schema.
 */
export function apiResourceSchema(): APIResourceSchema {
  const spec: APIResourceSchema["spec"] = {
    group: GROUP,
    names: {
      kind: KIND,
      listKind: LIST_KIND,
      plural: PLURAL,
      singular: SINGULAR,
    },
    scope: "Cluster",
    versions: [{
      name: VERSION,
      served: true,
      storage: true,
      schema: _objectSchema(),
      subresources: { status: {} },
      additionalPrinterColumns: _printerColumns(),
    }],
  };
  const hash = createHash("sha256").update(_canonicalJson(spec)).digest("hex");
  return {
    apiVersion: "apis.kcp.io/v1alpha1",
    kind: "APIResourceSchema",
    metadata: { name: `${VERSION}-${hash.slice(0, 8)}.${PLURAL}.${GROUP}` },
    spec,
  };
}

/**
 * The text of `manifests/kcp/dep-ctrl/apiresourceschema.yaml`: a header that
 * says the file is generated, then the APIResourceSchema as YAML.
 *
 * @returns The YAML text, ending in a newline.
 */
export function apiResourceSchemaYaml(): string {
  const header = [
    "# Generated by `deno task schema` from lib/rules/api.ts: do not edit by hand.",
    "# The DependencyRule type, served by the dep-ctrl APIExport. Apply in the",
    "# dep-ctrl workspace. Its name changes with its content, since kcp does",
    "# not allow an APIResourceSchema to change.",
  ];
  // Double quotes, as `deno fmt` writes YAML. dumpYaml runs js-yaml 5, which
  // takes `quoteStyle`, but declares the options of an older js-yaml.
  const options: DumpOptions & { quoteStyle: "double" } = {
    quoteStyle: "double",
  };
  const yaml = dumpYaml(apiResourceSchema(), options);
  return `${header.join("\n")}\n${yaml}`;
}

/**
 * Points the APIExport manifest at an APIResourceSchema: replaces the value of
 * its one `schema:` line for DependencyRules and leaves every other byte as
 * it was.
 *
 * @param text The APIExport manifest.
 * @param schemaName The new APIResourceSchema name.
 * @returns The manifest with the new name.
 * @throws {SyntaxError} If the manifest has no single `schema:` line naming a
 * `<prefix>.dependencyrules.dependencies.opendefense.cloud` schema.
 */
export function setApiExportSchema(text: string, schemaName: string): string {
  const line = /^([ \t]*schema:[ \t]*)(\S+)([ \t]*)$/gm;
  const matches = [...text.matchAll(line)].filter(([, , name]) =>
    name?.endsWith(`.${PLURAL}.${GROUP}`)
  );
  const [match] = matches;
  if (matches.length !== 1 || match === undefined) {
    throw new SyntaxError(
      `Cannot set the APIExport schema: found ${matches.length} 'schema:' lines for ${PLURAL}.${GROUP}, want 1`,
    );
  }
  const [whole, before = "", , after = ""] = match;
  const at = match.index;
  return `${text.slice(0, at)}${before}${schemaName}${after}${
    text.slice(at + whole.length)
  }`;
}

/** The schema of a whole object: the Kubernetes envelope, spec and status. */
function _objectSchema(): OpenApiSchema {
  const { spec } = DependencyRuleSchema.shape;
  const description = DependencyRuleSchema.description;
  return {
    type: "object",
    ...(description === undefined ? {} : { description }),
    required: ["spec"],
    properties: {
      apiVersion: {
        type: "string",
        description: "The versioned schema of this object.",
      },
      kind: { type: "string", description: "The type of this object." },
      metadata: { type: "object" },
      spec: _structural(z.toJSONSchema(spec, { io: "input" }), "spec"),
      status: _structural(
        z.toJSONSchema(DependencyRuleStatusSchema, { io: "input" }),
        "status",
      ),
    },
  };
}

function _printerColumns(): PrinterColumn[] {
  const ready = `.status.conditions[?(@.type=="${READY_CONDITION}")]`;
  return [
    {
      name: "Ready",
      type: "string",
      jsonPath: `${ready}.status`,
      description: `Status of the ${READY_CONDITION} condition.`,
    },
    {
      name: "Reason",
      type: "string",
      jsonPath: `${ready}.reason`,
      description: `Reason of the ${READY_CONDITION} condition: one of ${
        CONDITION_REASONS.join(", ")
      }.`,
    },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ];
}

/**
 * Turns a node of zod's JSON Schema into a structural schema node.
 *
 * @param node The JSON Schema node.
 * @param path Where the node is, for error messages.
 */
function _structural(node: unknown, path: string): OpenApiSchema {
  if (!isRecord(node)) {
    throw new TypeError(`Cannot convert schema at ${path}: not an object`);
  }
  const type = node["type"];
  if (typeof type !== "string" || !TYPES.has(type)) {
    throw new TypeError(
      `Cannot convert schema at ${path}: type is ${JSON.stringify(type)}`,
    );
  }
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "$schema") continue;
    if (key === "additionalProperties" && value === false) continue;
    if (!KNOWN_KEYWORDS.has(key)) {
      throw new TypeError(
        `Cannot convert schema at ${path}: keyword '${key}' is not supported`,
      );
    }
    if (key === "properties") {
      if (!isRecord(value)) {
        throw new TypeError(`Cannot convert schema at ${path}: bad properties`);
      }
      result[key] = Object.fromEntries(
        Object.entries(value).map((
          [name, child],
        ) => [name, _structural(child, `${path}.${name}`)]),
      );
    } else if (key === "items") {
      result[key] = _structural(value, `${path}[]`);
    } else {
      result[key] = value;
    }
  }
  if (type === "integer") {
    // zod bounds integers by the safe range; Kubernetes integers are int64.
    if (result["maximum"] === Number.MAX_SAFE_INTEGER) delete result["maximum"];
    if (result["minimum"] === Number.MIN_SAFE_INTEGER) delete result["minimum"];
    result["format"] ??= "int64";
  }
  // Kubernetes checks `format: date-time` itself; zod's pattern only repeats it.
  if (result["format"] === "date-time") delete result["pattern"];
  return _sorted(result) as unknown as OpenApiSchema;
}

/** `record` with its keys in a readable order: type and description first. */
function _sorted(record: Record<string, unknown>): Record<string, unknown> {
  const first = ["type", "description"];
  const keys = Object.keys(record);
  const ordered = [
    ...first.filter((key) => keys.includes(key)),
    ...keys.filter((key) => !first.includes(key)),
  ];
  return Object.fromEntries(ordered.map((key) => [key, record[key]]));
}

/** JSON with object keys sorted, so equal values hash equally. */
function _canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map((item) => _canonicalJson(item)).join(",")}]`;
  }
  if (isRecord(value)) {
    const entries = Object.keys(value).sort().flatMap((key) =>
      value[key] === undefined
        ? []
        : [`${JSON.stringify(key)}:${_canonicalJson(value[key])}`]
    );
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value);
}
