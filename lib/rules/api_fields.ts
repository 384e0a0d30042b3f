/**
 * The string fields of the APIs' zod schemas, DependencyRule's and Lock's
 * (`../locks/`): DNS subdomains, API versions, kinds, resources, workspace
 * paths and field paths. Each is a length and a pattern that JSON Schema can
 * express, so that the generated APIResourceSchema checks the same, with a
 * message that says what is wrong with the current value.
 *
 * @example A field
 * ```ts
 * import { kindField } from "./api_fields.ts";
 *
 * const kind = kindField("Kind of the protected type.");
 * kind.safeParse("virtualMachine").success; // false
 * ```
 *
 * @module
 */
import { z } from "zod";
import { FIELD_PATH_PATTERN, parseFieldPath } from "./field_path.ts";

const DNS_SUBDOMAIN_MAX = 253;
const DNS_LABEL_MAX = 63;
const KIND_MAX = 63;
const RESOURCE_MAX = 63;

/** A DNS subdomain without the per-label length limit, to word messages. */
const DNS_SUBDOMAIN_CHARACTERS =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Pattern of a DNS subdomain (RFC 1123): lowercase alphanumerics, `-` and
 * `.`, each dot-separated label starting and ending alphanumeric and at most
 * 63 characters long. The overall limit of 253 characters is a separate
 * length check.
 */
export const DNS_SUBDOMAIN_PATTERN =
  /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;
/** Pattern of an API version such as `v1`, `v1alpha1` or `v2beta3`. */
export const VERSION_PATTERN = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
/** Pattern of a kind: an upper-case letter followed by letters and digits. */
export const KIND_PATTERN = /^[A-Z][A-Za-z0-9]*$/;
/** Pattern of a resource: lowercase letters and digits, starting with a letter. */
export const RESOURCE_PATTERN = /^[a-z][a-z0-9]*$/;
/**
 * Pattern of a kcp workspace path such as `root` or `root:org-1:team-2`:
 * DNS labels of at most 63 characters joined by `:`.
 */
export const WORKSPACE_PATH_PATTERN =
  /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
/** A string field that must be a DNS subdomain, with `description` for the schema. */
export function dnsSubdomainField(description: string): z.ZodString {
  return z.string().max(DNS_SUBDOMAIN_MAX, {
    abort: true,
    error: (issue) =>
      `must be a DNS subdomain of at most ${DNS_SUBDOMAIN_MAX} characters: current length is ${
        stringLength(issue.input)
      }`,
  }).regex(DNS_SUBDOMAIN_PATTERN, {
    error: (issue) => _dnsSubdomainMessage(String(issue.input)),
  }).describe(description);
}

function _dnsSubdomainMessage(value: string): string {
  if (!DNS_SUBDOMAIN_CHARACTERS.test(value)) {
    return `must be a DNS subdomain (lowercase alphanumerics, '-' and '.', each dot-separated part starting and ending alphanumeric): current value is '${value}'`;
  }
  return `must be a DNS subdomain whose dot-separated parts have at most ${DNS_LABEL_MAX} characters: current value is '${value}'`;
}

/** A string field that must be an API version such as `v1alpha1`. */
export function versionField(description: string): z.ZodString {
  return z.string().regex(VERSION_PATTERN, {
    error: (issue) =>
      `must look like v1, v1alpha1 or v2beta3: current value is '${
        String(issue.input)
      }'`,
  }).describe(description);
}

/** A string field that must be a kind such as `VirtualMachine`. */
export function kindField(description: string): z.ZodString {
  return z.string().max(KIND_MAX, {
    abort: true,
    error: (issue) =>
      `must be at most ${KIND_MAX} characters: current length is ${
        stringLength(issue.input)
      }`,
  }).regex(KIND_PATTERN, {
    error: (issue) =>
      `must start with an upper-case letter followed by letters and digits: current value is '${
        String(issue.input)
      }'`,
  }).describe(description);
}

/** A string field that must be a plural resource such as `vpcs`. */
export function resourceField(description: string): z.ZodString {
  return z.string().max(RESOURCE_MAX, {
    abort: true,
    error: (issue) =>
      `must be at most ${RESOURCE_MAX} characters: current length is ${
        stringLength(issue.input)
      }`,
  }).regex(RESOURCE_PATTERN, {
    error: (issue) =>
      `must be lowercase letters and digits starting with a letter: current value is '${
        String(issue.input)
      }'`,
  }).describe(description);
}

/** A string field that must be a workspace path such as `root:org`. */
export function workspacePathField(description: string): z.ZodString {
  return z.string().regex(WORKSPACE_PATH_PATTERN, {
    error: (issue) =>
      `must be a workspace path of lowercase segments joined by ':', such as 'root' or 'root:org-1:team-2': current value is '${
        String(issue.input)
      }'`,
  }).describe(description);
}

/**
 * A string field that must be a field path in the grammar of
 * `./field_path.ts`; the message is the parser's explanation.
 */
export function fieldPathField(description: string): z.ZodString {
  return z.string().regex(FIELD_PATH_PATTERN, {
    error: (issue) => _fieldPathMessage(String(issue.input)),
  }).describe(description);
}

/** The parser's explanation of why `value` is not a field path. */
function _fieldPathMessage(value: string): string {
  try {
    parseFieldPath(value);
  } catch (error) {
    if (error instanceof SyntaxError) return error.message;
    throw error;
  }
  // Unreachable while FIELD_PATH_PATTERN and parseFieldPath agree.
  return `must match ${FIELD_PATH_PATTERN.source}: current value is '${value}'`;
}

/** The length of a string input, 0 for any other. */
export function stringLength(input: unknown): number {
  return typeof input === "string" ? input.length : 0;
}
