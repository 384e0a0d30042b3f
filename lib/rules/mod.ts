/**
 * DependencyRules: the API types and their validation, field paths, the
 * references they find in a dependent and their check against a schema, the
 * shared rule types (a rule in its logical cluster, group/version/resource),
 * the rule graph that decides which rules are enforced, and the rule view of
 * the process's one export watcher (`ruleView`).
 *
 * @module
 */
export * from "./api.ts";
export {
  DNS_SUBDOMAIN_PATTERN,
  dnsSubdomainField,
  KIND_PATTERN,
  kindField,
  RESOURCE_PATTERN,
  resourceField,
  VERSION_PATTERN,
  versionField,
  WORKSPACE_PATH_PATTERN,
  workspacePathField,
} from "./api_fields.ts";
export * from "./field_path.ts";
export * from "./references.ts";
export * from "./rule_graph.ts";
export * from "./rule_watcher.ts";
export * from "./schema_path.ts";
export {
  OBJECT_META_SCHEMA,
  pruneSchema,
  type SchemaNode,
} from "./schema_walk.ts";
export * from "./types.ts";
