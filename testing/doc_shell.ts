/**
 * A guide's shell blocks, run as written: the Markdown read into sections
 * and fenced blocks, one section's path resolved the way its prose tells a
 * reader to follow it ("run the commands of [step 2](#...)", "the checks
 * of [step 3](#...)"), and a shell that runs each block with bash, in
 * order, as one session would.
 *
 * What the path holds, for the section named and each section it points
 * to (`operatorPath`):
 *
 * - every ```sh, ```bash or ```shell block, in order, of the section and
 *   of the sections under it (its deeper headings: "the commands of
 *   [step 8]" are also those of step 8's `###` examples); a ```yaml block
 *   the prose before it says to "save as `<file>`" becomes that file;
 * - a bare ``` block right after a shell block is what that block prints:
 *   it must print it (`outputMatches`), and a block whose output starts
 *   with `Error from server` must also fail;
 * - a block whose prose before it gives an exit code (`exit code 1: held`)
 *   must exit with that code;
 * - a block whose prose before it says "within about N s" may be run
 *   again until it passes, for twice that long; one whose prose after it
 *   says "repeat it a few seconds later" may be run again after a failure;
 * - from the sections pointed to (never from the section named), blocks
 *   left out as the section tells a reader to: those that talk to the
 *   hosting cluster (`kubectl` without `--kubeconfig`, the kubectl plugin
 *   `kubectl dependencies` too), run the image (`podman`, `docker`), or
 *   hold a `<placeholder>`.
 *
 * {@linkcode DocShell} runs each block in its own `bash` (under `setsid`,
 * so each block is a process group of its own), with `set -eo pipefail`
 * and the shell state the earlier blocks left (their functions and
 * variables), so a failing command fails its block. Processes a block
 * starts with `&` keep running until {@linkcode DocShell.stop}.
 *
 * @module
 */
import { pathExists } from "./process.ts";

/** A fenced block of a Markdown file. */
export interface FencedBlock {
  /** The info string's first word (`sh`, `yaml`, ...); empty for a bare fence. */
  lang: string;
  /** The body, without the indentation of the fence. */
  text: string;
  /** The 1-based line of the opening fence. */
  line: number;
  /** The prose between the previous block (or the heading) and this one. */
  before: string;
  /** The prose between this block and the next (or the next heading). */
  after: string;
}

/** A part of a Markdown file from one heading to the next, of any level. */
export interface MarkdownSection {
  /** The heading text, as written. */
  heading: string;
  /** 1 for `#`, 2 for `##`, ... */
  level: number;
  /** The anchor a link to it uses (`#<anchor>`). */
  anchor: string;
  /** The 1-based line of the heading. */
  line: number;
  /** Prose and blocks in order, starting with the prose. */
  parts: (string | FencedBlock)[];
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as `-`. */
export function headingAnchor(heading: string): string {
  return heading.trim().toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/**
 * The sections of a Markdown file: each heading (outside fences) up to the
 * next, with its prose and fenced blocks in order. What comes before the
 * first heading is a section with an empty heading.
 */
export function markdownSections(markdown: string): MarkdownSection[] {
  const lines = markdown.split("\n");
  const sections: MarkdownSection[] = [];
  let current: MarkdownSection = {
    heading: "",
    level: 0,
    anchor: "",
    line: 1,
    parts: [""],
  };
  const prose = (text: string) => {
    const last = current.parts.length - 1;
    const tail = current.parts[last];
    if (typeof tail === "string") current.parts[last] = tail + text;
    else current.parts.push(text);
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^([ \t]*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
    if (fence !== null) {
      const [, indent, marks, lang] = fence as unknown as [
        string,
        string,
        string,
        string,
      ];
      const body: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const closing = lines[j]!;
        if (
          closing.trim().startsWith(marks) &&
          closing.trim().replace(/[`~]/g, "") === ""
        ) break;
        body.push(
          closing.startsWith(indent) ? closing.slice(indent.length) : closing,
        );
      }
      current.parts.push({
        lang,
        text: body.join("\n") + "\n",
        line: i + 1,
        before: "",
        after: "",
      });
      current.parts.push("");
      i = j;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      sections.push(current);
      const text = heading[2]!;
      current = {
        heading: text,
        level: heading[1]!.length,
        anchor: headingAnchor(text),
        line: i + 1,
        parts: [""],
      };
      continue;
    }
    prose(line + "\n");
  }
  sections.push(current);
  for (const section of sections) {
    section.parts.forEach((part, k) => {
      if (typeof part === "string") return;
      const before = section.parts[k - 1];
      const after = section.parts[k + 1];
      part.before = typeof before === "string" ? before : "";
      part.after = typeof after === "string" ? after : "";
    });
  }
  return sections;
}

/** The blocks of a section, in order. */
export function sectionBlocks(section: MarkdownSection): FencedBlock[] {
  return section.parts.filter((p): p is FencedBlock => typeof p !== "string");
}

const SHELL_LANGS = new Set(["sh", "bash", "shell"]);

/** Whether a block is shell commands. */
export function isShell(block: FencedBlock): boolean {
  return SHELL_LANGS.has(block.lang);
}

/** One entry of a path: a block to run, a file to save, or a block left out. */
export type PathItem =
  | {
    kind: "run";
    /** The section the block is in. */
    from: string;
    block: FencedBlock;
    /** What the block must print (a bare block right after it). */
    expected?: string;
    /** The block must exit non-zero (its output is an error, or `exitCode` is). */
    mustFail: boolean;
    /** The exit code the prose before the block gives (`exit code N`). */
    exitCode?: number;
    /** How long the block may be run again until it passes. */
    retryMs: number;
  }
  | {
    kind: "save";
    from: string;
    block: FencedBlock;
    /** The file name the prose gives. */
    file: string;
  }
  | {
    kind: "skip";
    from: string;
    block: FencedBlock;
    /** Why the section tells a reader to leave it out. */
    reason: string;
  };

/** A reference in the prose: the commands (or only the checks) of a section. */
interface Reference {
  what: "commands" | "checks";
  anchor: string;
}

/** The references of one piece of prose, in order. */
export function proseReferences(
  prose: string,
): { what: "commands" | "checks"; anchor: string }[] {
  const text = prose.replace(/\s+/g, " ");
  const found: Reference[] = [];
  const sentence =
    /\bthe (commands|checks) of ((?:(?:,|and|\s)*\[[^\]]+\]\(#[^)\s]+\))+)/g;
  for (const [, what, links] of text.matchAll(sentence)) {
    for (const [, anchor] of links!.matchAll(/\]\(#([^)\s]+)\)/g)) {
      found.push({ what: what as Reference["what"], anchor: anchor! });
    }
  }
  return found;
}

/** Why a block of a section pointed to is left out, or `undefined` to run it. */
export function leaveOutReason(text: string): string | undefined {
  const commands = text.replace(/^\s*#.*\n/gm, "").replace(/\\\n/g, " ");
  for (const line of commands.split("\n")) {
    for (const command of line.split(/\||&&|;|\$\(/)) {
      const words = command.trim().split(/\s+/);
      if (words[0] === "kubectl" && !words.some(isKubeconfigFlag)) {
        return "talks to the hosting cluster (kubectl without --kubeconfig)";
      }
      if (words[0] === "podman" || words[0] === "docker") {
        return `runs the image (${words[0]})`;
      }
    }
  }
  const placeholder = /<[a-z][a-z0-9 ._-]*>/i.exec(commands);
  if (placeholder !== null) return `holds the placeholder ${placeholder[0]}`;
  return undefined;
}

function isKubeconfigFlag(word: string): boolean {
  return word === "--kubeconfig" || word.startsWith("--kubeconfig=");
}

/** How long a block may be run again, from the prose around it. */
function retryMsOf(block: FencedBlock): number {
  const within = /within about (\d+) ?s\b/i.exec(block.before.slice(-300));
  if (within !== null) return 2_000 * Number(within[1]);
  if (/repeat it a few seconds later/i.test(block.after)) return 20_000;
  return 0;
}

/** The exit code the prose right before a block gives, if any. */
function exitCodeOf(block: FencedBlock): number | undefined {
  // Prose is wrapped anywhere (deno fmt reflows it): any whitespace.
  const said = /\bexit\s+code\s+(\d+)\b/i.exec(block.before.slice(-300));
  return said === null ? undefined : Number(said[1]);
}

/** The path items of one section's blocks, as a reader runs them. */
function itemsOf(
  section: MarkdownSection,
  blocks: readonly FencedBlock[],
  leaveOut: boolean,
): PathItem[] {
  const all = sectionBlocks(section);
  const items: PathItem[] = [];
  for (const block of blocks) {
    const from = section.heading;
    if (block.lang === "yaml") {
      const save = /save (?:it )?as `([^`]+)`/i.exec(block.before);
      if (save !== null) {
        items.push({ kind: "save", from, block, file: save[1]! });
      }
      continue;
    }
    if (!isShell(block)) continue;
    const reason = leaveOut ? leaveOutReason(block.text) : undefined;
    if (reason !== undefined) {
      items.push({ kind: "skip", from, block, reason });
      continue;
    }
    const next = all[all.indexOf(block) + 1];
    const expected = next !== undefined && next.lang === "" &&
        block.after.trim() === ""
      ? next.text
      : undefined;
    const exitCode = exitCodeOf(block);
    items.push({
      kind: "run",
      from,
      block,
      ...(expected === undefined ? {} : { expected }),
      mustFail: (expected?.startsWith("Error from server") ?? false) ||
        (exitCode ?? 0) !== 0,
      ...(exitCode === undefined ? {} : { exitCode }),
      retryMs: retryMsOf(block),
    });
  }
  return items;
}

/**
 * The section at `at` and the sections under it: those after it up to the
 * next heading of its level or higher.
 */
function withSubsections(
  sections: readonly MarkdownSection[],
  at: number,
): MarkdownSection[] {
  const level = sections[at]!.level;
  const end = sections.findIndex((s, i) => i > at && s.level <= level);
  return sections.slice(at, end < 0 ? undefined : end);
}

/** The blocks of a section after its "**Check.**" paragraph. */
function checkBlocks(section: MarkdownSection): FencedBlock[] {
  const at = section.parts.findIndex((p) =>
    typeof p === "string" && /\*\*Check\.\*\*/.test(p)
  );
  if (at < 0) {
    throw new Error(`"${section.heading}" has no **Check.** paragraph`);
  }
  return section.parts.slice(at).filter((p): p is FencedBlock =>
    typeof p !== "string"
  );
}

/**
 * The path a reader of the section `heading` follows: its own blocks and,
 * where its prose says to run the commands (or the checks) of another
 * section, that section's (the commands: with those of the sections under
 * it), in the order the prose names them.
 *
 * @throws {Error} If the section, or one it points to, is not in the file.
 */
export function operatorPath(markdown: string, heading: string): PathItem[] {
  const sections = markdownSections(markdown);
  const section = sections.find((s) => s.heading === heading);
  if (section === undefined) throw new Error(`no section "${heading}"`);
  const items: PathItem[] = [];
  for (const part of section.parts) {
    if (typeof part !== "string") {
      items.push(...itemsOf(section, [part], false));
      continue;
    }
    for (const { what, anchor } of proseReferences(part)) {
      const at = sections.findIndex((s) => s.anchor === anchor);
      if (at < 0) {
        throw new Error(`"${heading}" points to #${anchor}: no such heading`);
      }
      if (what === "checks") {
        items.push(...itemsOf(sections[at]!, checkBlocks(sections[at]!), true));
        continue;
      }
      for (const target of withSubsections(sections, at)) {
        items.push(...itemsOf(target, sectionBlocks(target), true));
      }
    }
  }
  return items;
}

/** The words of a line, whitespace collapsed. */
function words(line: string): string[] {
  return line.trim().split(/\s+/).filter((w) => w !== "");
}

const AGE = /^\d+(\.\d+)?(ms|s|m|h|d)(\d+(s|m|h))?$/;

/**
 * Whether the word `actual` is the word `expected`: the same, or both ages,
 * or the same where each `<placeholder>` of `expected` stands for any
 * characters (`<cluster>/vm-subnets)` for `2x7ilq1k5gqa4pqy/vm-subnets)`).
 */
function wordMatches(expected: string, actual: string): boolean {
  if (expected === actual) return true;
  if (AGE.test(expected) && AGE.test(actual)) return true;
  const parts = expected.split(/<[a-z][a-z0-9._-]*>/i);
  if (parts.length === 1) return false;
  const pattern = parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join(".+");
  return new RegExp(`^${pattern}$`).test(actual);
}

/**
 * Whether `actual` shows every line of `expected`, in order: the words of
 * each expected line begin some later line of `actual` (so kubectl may add
 * words at the end, such as `from default namespace`), where an age in
 * `expected` (`5s`, `3m`) stands for any age, and a `<placeholder>` in a
 * word for any characters.
 */
export function outputMatches(expected: string, actual: string): boolean {
  const have = actual.split("\n").map(words);
  let at = 0;
  for (const line of expected.split("\n").map(words)) {
    if (line.length === 0) continue;
    const found = have.findIndex((candidate, i) =>
      i >= at && line.length <= candidate.length &&
      line.every((w, k) => wordMatches(w, candidate[k]!))
    );
    if (found < 0) return false;
    at = found + 1;
  }
  return true;
}

/** Options for {@linkcode DocShell}. */
export interface DocShellOptions {
  /** The directory the blocks run in. */
  cwd: string;
  /** The environment of every block (nothing else is inherited). */
  env: Record<string, string>;
  /** Where the shell keeps its state and each block's script and output. */
  stateDir: string;
}

/** What one run of a block did. */
export interface BlockRun {
  /** Its exit code; `undefined` when it was stopped after `timeoutMs`. */
  code: number | undefined;
  /** Standard output and standard error, as they interleaved. */
  output: string;
  /** How long it took. */
  ms: number;
}

const WRAPPER =
  `# Runs one block ($1) with the state of the blocks before it ($2), then
# saves the state again and lists the jobs the block left running ($3).
__block=$1 __state=$2 __jobs=$3
__save() {
  local __code=$? __v __line __flags
  {
    for __v in $(compgen -A function); do
      case "$__v" in __*) ;; *) declare -f "$__v" ;; esac
    done
    for __v in $(compgen -v); do
      case "$__v" in
        __* | BASH* | _ | FUNCNAME | GROUPS | PIPESTATUS | RANDOM | SRANDOM | \\
          SECONDS | LINENO | EPOCH* | HISTCMD | SHLVL | PPID | UID | EUID | \\
          OPTIND | OPTARG | OLDPWD | PWD | DIRSTACK | COMP_*) continue ;;
      esac
      __line=$(declare -p "$__v" 2>/dev/null) || continue
      __flags=\${__line#declare -}
      case "\${__flags%% *}" in *r*) continue ;; esac
      printf '%s\\n' "$__line"
    done
  } >"$__state.new" && mv "$__state.new" "$__state"
  jobs -p >>"$__jobs"
  exit "$__code"
}
if [ -f "$__state" ]; then . "$__state"; fi
trap __save EXIT
set -eo pipefail
. "$__block"
`;

/**
 * Runs shell blocks one after another as one reader's session: each in its
 * own `bash`, with the functions and variables the blocks before it left.
 */
export class DocShell {
  readonly #options: DocShellOptions;
  readonly #groups: number[] = [];
  #count = 0;

  /** Prepares nothing until the first {@linkcode DocShell.run}. */
  constructor(options: DocShellOptions) {
    this.#options = options;
  }

  /**
   * Runs `text` with bash, `set -eo pipefail`, in the working directory,
   * and waits for it (not for what it starts with `&`). After `timeoutMs`
   * its process group is stopped and `code` is `undefined`.
   */
  async run(text: string, timeoutMs = 120_000): Promise<BlockRun> {
    const { cwd, env, stateDir } = this.#options;
    await Deno.mkdir(stateDir, { recursive: true });
    const n = ++this.#count;
    const script = `${stateDir}/block-${n}.sh`;
    const log = `${stateDir}/block-${n}.log`;
    const jobs = `${stateDir}/block-${n}.jobs`;
    const group = `${stateDir}/block-${n}.pgid`;
    await Deno.writeTextFile(`${stateDir}/wrapper.sh`, WRAPPER);
    await Deno.writeTextFile(script, text);
    await Deno.writeTextFile(jobs, "");
    const started = performance.now();
    const child = new Deno.Command("setsid", {
      args: [
        "--wait",
        "bash",
        "-c",
        'echo $$ >"$4"; exec >"$5" 2>&1 </dev/null; . "$0" "$1" "$2" "$3"',
        `${stateDir}/wrapper.sh`,
        script,
        `${stateDir}/state.sh`,
        jobs,
        group,
        log,
      ],
      cwd,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let timedOut = false;
    const timer = setTimeout(async () => {
      timedOut = true;
      const pgid = await readPid(group);
      if (pgid !== undefined) signalGroup(pgid, "SIGKILL");
    }, timeoutMs);
    const status = await child.status;
    clearTimeout(timer);
    const pgid = await readPid(group);
    const left = (await Deno.readTextFile(jobs)).trim();
    if (pgid !== undefined && left !== "") this.#groups.push(pgid);
    return {
      code: timedOut ? undefined : status.code,
      output: await Deno.readTextFile(log).catch(() => ""),
      ms: performance.now() - started,
    };
  }

  /**
   * The output of each block that left processes running, with theirs
   * (they write where the block did), last `lines` lines each.
   */
  async backgroundLogs(lines = 40): Promise<string> {
    const logs: string[] = [];
    for (let n = 1; n <= this.#count; n++) {
      const dir = this.#options.stateDir;
      const jobs = await Deno.readTextFile(`${dir}/block-${n}.jobs`)
        .catch(() => "");
      if (jobs.trim() === "") continue;
      const log = await Deno.readTextFile(`${dir}/block-${n}.log`)
        .catch(() => "");
      logs.push(
        `--- block ${n}, jobs ${jobs.trim().split("\n").join(" ")} ---\n` +
          log.split("\n").slice(-lines).join("\n"),
      );
    }
    return logs.join("\n");
  }

  /** Whether every process the blocks left running with `&` still runs. */
  async jobsAlive(): Promise<boolean> {
    for (let n = 1; n <= this.#count; n++) {
      const jobs = await Deno.readTextFile(
        `${this.#options.stateDir}/block-${n}.jobs`,
      ).catch(() => "");
      for (const pid of jobs.split("\n").filter((l) => l.trim() !== "")) {
        if (!(await pathExists(`/proc/${pid.trim()}`))) return false;
        const stat = await Deno.readTextFile(`/proc/${pid.trim()}/stat`)
          .catch(() => "");
        if (/\) Z /.test(stat)) return false;
      }
    }
    return true;
  }

  /**
   * Stops what the blocks left running: SIGTERM to each such block's
   * process group, SIGKILL to what is left after `graceMs`.
   */
  async stop(graceMs = 10_000): Promise<void> {
    const groups = this.#groups.splice(0);
    for (const pgid of groups) signalGroup(pgid, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (groups.some(groupAlive) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const pgid of groups) signalGroup(pgid, "SIGKILL");
  }
}

async function readPid(path: string): Promise<number | undefined> {
  const text = await Deno.readTextFile(path).catch(() => "");
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 1 ? pid : undefined;
}

function signalGroup(pgid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pgid, signal);
  } catch {
    // the group is gone
  }
}

function groupAlive(pgid: number): boolean {
  try {
    Deno.kill(-pgid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}
