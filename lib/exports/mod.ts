/**
 * APIExports as both components check them: reading what an APIExport
 * serves (its types, served versions, kinds and pruned schemas) through
 * the front-proxy, and the pure checks of a rule's or a Lock's types against
 * what was read (`TypeNotExported`, `APIExportNotFound`, `FieldNotInSchema`).
 * The controller reports them in status; the webhook enforces only the
 * rules whose dependent type their own workspace exports.
 *
 * @module
 */
export * from "./bound_resources.ts";
export * from "./export_checks.ts";
export * from "./export_reader.ts";
