/**
 * The links of a Markdown file, as the tests of the documentation check
 * them: every inline (`[text](target)`) and reference
 * (`[label]: target`) link target outside fenced code blocks and code
 * spans.
 *
 * ```ts
 * import { linkTargets } from "./markdown_links.ts";
 *
 * linkTargets("See [the guide](docs/guide.md#start), not `[x](y)`.");
 * // ["docs/guide.md#start"]
 * ```
 *
 * @module
 */

/** Markdown without its fenced code blocks, of backticks or of tildes. */
export function withoutCode(markdown: string): string {
  return markdown.replace(
    /^[ \t]*(`{3,}|~{3,})[^\n]*\n[\s\S]*?^[ \t]*\1[ \t]*$/gm,
    "",
  );
}

/** Inline and reference link targets outside code blocks and code spans. */
export function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown).replace(/`[^`\n]*`/g, "");
  const targets: string[] = [];
  for (
    const [, target] of text.matchAll(
      /\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)/g,
    )
  ) {
    targets.push(target!);
  }
  for (
    const [, target] of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)/gm)
  ) {
    targets.push(target!);
  }
  return targets;
}
