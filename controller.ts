/**
 * dependency-controller: keeps one ValidatingWebhookConfiguration per kcp
 * provider workspace that hosts a type protected by a DependencyRule.
 *
 * Not implemented yet: this entrypoint only answers `--help`.
 *
 * @module
 */

const USAGE = `Usage: controller [--help]

Installs the dependency webhook in kcp provider workspaces. Not implemented yet.`;

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  console.error("controller: not implemented yet");
  Deno.exit(2);
}
