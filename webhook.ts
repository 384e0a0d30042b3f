/**
 * dependency-webhook: denies the deletion of kcp objects that other objects
 * still refer to, as DependencyRules describe.
 *
 * Not implemented yet: this entrypoint only answers `--help`.
 *
 * @module
 */

const USAGE = `Usage: webhook [--help]

Serves the admission webhook that blocks deletes of referenced objects. Not implemented yet.`;

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  console.error("webhook: not implemented yet");
  Deno.exit(2);
}
