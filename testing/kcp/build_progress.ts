/**
 * Progress for the long `go build`s of `deno task kcp:build`: a heartbeat
 * with the time spent and the packages compiled out of those to compile.
 *
 * The total comes from `go list -deps` (run beside the build, so it costs
 * no time): every package the binary needs, and of those the ones not in
 * the Go build cache. The progress comes from the package paths `go build
 * -v` prints on standard error as it compiles them; its `go: downloading`
 * lines are counted instead of printed, and every other line (a compile
 * error) is passed on. On a terminal the heartbeat is one line redrawn in
 * place; elsewhere (CI logs, pipes) it is a line every 10 s.
 *
 * ```
 * kcp:build: kcp: 10 s, downloading modules (84 so far)
 * kcp:build: kcp: 120 s, compiled 903 of 2480 packages (36%)
 * kcp:build: kcp: 410 s, compiled 2480 of 2480 packages, linking
 * ```
 *
 * @module
 */

/** How `go list` prints each package for {@linkcode countPackages}. */
export const GO_LIST_FORMAT = "{{.ImportPath}}\t{{.Stale}}\t{{.StaleReason}}";

/**
 * The `StaleReason` of a package whose build is cached but that `go
 * install` would still install: `go build` compiles nothing for it.
 */
const CACHED = "not installed but available in build cache";

/** What `go list -deps` says about the packages a build needs. */
export interface PackageCount {
  /** Every package, the standard library's included. */
  total: number;
  /** Those not in the Go build cache: what `go build -v` will print. */
  toCompile: number;
  /** The package built (`go list -deps` lists it last). */
  main: string | undefined;
}

/**
 * Counts the packages in the output of `go list -deps -f
 * '{{.ImportPath}}\t{{.Stale}}\t{{.StaleReason}}'` ({@linkcode GO_LIST_FORMAT}).
 * A line without the tab-separated fields (`go list -deps` alone) counts
 * toward the total and toward those to compile. `compiled` names packages
 * the build compiled while `go list` ran: they are to compile even if `go
 * list` found them in the cache already.
 */
export function countPackages(
  listed: string,
  compiled: Iterable<string> = [],
): PackageCount {
  const done = new Set(compiled);
  let total = 0;
  let toCompile = 0;
  let main: string | undefined;
  for (const line of listed.split("\n")) {
    if (line.trim() === "") continue;
    const [path = "", stale, reason = ""] = line.split("\t");
    total++;
    main = path.trim();
    if (
      stale === undefined || (stale === "true" && reason !== CACHED) ||
      done.has(main)
    ) {
      toCompile++;
    }
  }
  return { total, toCompile, main };
}

/** One line of `go build -v`'s standard error. */
export type GoBuildLine =
  | { kind: "package"; path: string }
  | { kind: "download"; module: string }
  | { kind: "other"; text: string };

const IMPORT_PATH = /^[A-Za-z0-9_.~+-]+(?:\/[A-Za-z0-9_.~+-]+)*$/;
const DOWNLOADING = /^go: downloading (.+)$/;

/**
 * Tells a compiled package's import path (`go build -v`) and a module
 * download (`go: downloading <module> <version>`) from anything else: a
 * compile error, which has spaces or a colon, is always "other".
 */
export function parseGoBuildLine(line: string): GoBuildLine {
  const text = line.trimEnd();
  if (IMPORT_PATH.test(text)) return { kind: "package", path: text };
  const download = DOWNLOADING.exec(text);
  if (download !== null) return { kind: "download", module: download[1]! };
  return { kind: "other", text };
}

/** What a build has done so far. */
export interface GoBuildProgress {
  /** Modules downloaded (`go: downloading` lines). */
  downloads: number;
  /** Packages compiled (package lines). */
  compiled: number;
  /** What `go list` counted, once it has. */
  count: PackageCount | undefined;
  /** Whether the package built has been compiled: only linking is left. */
  mainCompiled: boolean;
}

/**
 * The heartbeat line: `<label>: <seconds> s, <what>`, where what is
 * "loading packages", "downloading modules (N so far)", "compiled N of M
 * packages (P%)" or, once every package is compiled, "..., linking".
 */
export function formatGoProgress(
  label: string,
  progress: GoBuildProgress,
  elapsedMs: number,
): string {
  const { downloads, compiled, count, mainCompiled } = progress;
  // A package compiled that go list thought cached still counts.
  const of = count === undefined
    ? undefined
    : Math.max(count.toCompile, compiled);
  let what: string;
  if (of === 0) {
    what = "every package is in the build cache, linking";
  } else if (mainCompiled || (of !== undefined && compiled >= of)) {
    what = `compiled ${
      of === undefined ? packages(compiled) : `${compiled} of ${packages(of)}`
    }, linking`;
  } else if (compiled === 0 && downloads > 0) {
    what = `downloading modules (${downloads} so far)`;
  } else if (of !== undefined) {
    const percent = Math.floor((compiled / of) * 100);
    what = `compiled ${compiled} of ${packages(of)} (${percent}%)`;
  } else if (compiled > 0) {
    what = `compiled ${packages(compiled)}`;
  } else {
    what = "loading packages";
  }
  return `${label}: ${Math.floor(elapsedMs / 1000)} s, ${what}`;
}

function packages(count: number): string {
  return `${count} package${count === 1 ? "" : "s"}`;
}

/** Options for {@linkcode StatusLine}. */
export interface StatusLineOptions {
  /**
   * Whether the output is a terminal: the status is one line redrawn in
   * place (carriage return); otherwise each status shown is a line of its
   * own.
   */
  terminal: boolean;
  /** Writes text as it is (no newline is added). */
  write: (text: string) => void;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
  /** The least time between two lines when not a terminal. @default {10_000} */
  intervalMs?: number;
  /** The least time between two redraws on a terminal. @default {200} */
  redrawMs?: number;
  /**
   * The terminal's width: a longer status is cut to fit (without its
   * colours). @default {0, no limit}
   */
  columns?: number;
}

/** Colour codes, which take no room on the terminal. */
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** Erases the terminal's current line. */
const ERASE_LINE = "\r\x1b[K";

/**
 * A status that changes over time, written at a bounded rate: on a terminal
 * one line redrawn in place, elsewhere a line at most every `intervalMs`
 * (the first one `intervalMs` after it was made, so a short wait prints
 * nothing).
 */
export class StatusLine {
  readonly #terminal: boolean;
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #gapMs: number;
  readonly #columns: number;
  #next: number;
  #shown = "";

  /** Starts the clock; writes nothing. */
  constructor(options: StatusLineOptions) {
    this.#terminal = options.terminal;
    this.#write = options.write;
    this.#now = options.now ?? (() => performance.now());
    this.#gapMs = options.terminal
      ? options.redrawMs ?? 200
      : options.intervalMs ?? 10_000;
    this.#columns = options.columns ?? 0;
    this.#next = this.#now() + (options.terminal ? 0 : this.#gapMs);
  }

  /** Shows `text` if it is time to; returns whether it was written. */
  update(text: string): boolean {
    const now = this.#now();
    if (now < this.#next) return false;
    this.#next = now + this.#gapMs;
    if (this.#terminal) {
      // A status wider than the terminal would wrap, and a carriage return
      // would then redraw only its last line: it is cut (its colours lost).
      const plain = text.replace(COLOUR, "");
      const cut = this.#columns > 1 && plain.length >= this.#columns
        ? `${plain.slice(0, this.#columns - 4)}...`
        : text;
      this.#shown = cut;
      this.#write(`${ERASE_LINE}${cut}`);
    } else {
      this.#write(`${text}\n`);
    }
    return true;
  }

  /**
   * Writes `line` (and a newline) to stay: on a terminal the status is
   * erased first and drawn again below it. `write` is where the line goes
   * (say, standard error), by default where the status goes.
   */
  print(line: string, write: (text: string) => void = this.#write): void {
    if (this.#terminal && this.#shown !== "") this.#write(ERASE_LINE);
    write(`${line}\n`);
    if (this.#terminal && this.#shown !== "") this.#write(this.#shown);
  }

  /** Erases the status from a terminal, for what is printed next. */
  clear(): void {
    if (this.#terminal && this.#shown !== "") this.#write(ERASE_LINE);
    this.#shown = "";
  }
}

/** The lines of a byte stream, without their line ends. */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<string> {
  let rest = "";
  for await (const text of stream.pipeThrough(new TextDecoderStream())) {
    rest += text;
    let end: number;
    while ((end = rest.indexOf("\n")) >= 0) {
      yield rest.slice(0, end).replace(/\r$/, "");
      rest = rest.slice(end + 1);
    }
  }
  if (rest !== "") yield rest.replace(/\r$/, "");
}

/** One `go build` of one package. */
export interface GoBuildCommand {
  /** The module directory to build in. */
  cwd: string;
  /** Environment variables added to the inherited ones. */
  env: Record<string, string>;
  /** `go build` flags before the package (`-trimpath`, `-o`, `-ldflags`). */
  flags: readonly string[];
  /** The package to build. */
  pkg: string;
  /** The start of each heartbeat line, e.g. `kcp:build: kcp`. */
  label: string;
}

/** Options for {@linkcode buildWithProgress}. */
export interface BuildWithProgressOptions {
  /** Where the heartbeat goes. @default {standard output} */
  write?: (text: string) => void;
  /** Where the build's own messages (errors) go. @default {standard error} */
  writeError?: (text: string) => void;
  /** Whether the heartbeat is a line redrawn in place. @default {whether standard output is a terminal} */
  terminal?: boolean;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
  /** The least time between two heartbeat lines when not a terminal. @default {10_000} */
  intervalMs?: number;
  /** How often the heartbeat is looked at. @default {1_000} */
  tickMs?: number;
}

/** What {@linkcode buildWithProgress} saw. */
export interface GoBuildSummary extends GoBuildProgress {
  /** Heartbeat lines (or redraws) written. */
  heartbeats: number;
}

/**
 * Runs `go build -v <flags> <pkg>` with a heartbeat
 * ({@linkcode formatGoProgress}) and, beside it, `go list -deps` for the
 * total. The heartbeat is erased from a terminal when the build ends.
 *
 * @throws {Deno.errors.NotFound} If `go` is not on `PATH`.
 * @throws {Error} If `go build` exits non-zero (its messages were passed on).
 */
export async function buildWithProgress(
  command: GoBuildCommand,
  options: BuildWithProgressOptions = {},
): Promise<GoBuildSummary> {
  const write = options.write ?? writeTo(Deno.stdout);
  const writeError = options.writeError ?? writeTo(Deno.stderr);
  const now = options.now ?? (() => performance.now());
  const terminal = options.terminal ?? Deno.stdout.isTerminal();
  const status = new StatusLine({
    terminal,
    write,
    now,
    ...(options.intervalMs === undefined
      ? {}
      : { intervalMs: options.intervalMs }),
    columns: terminal ? terminalColumns() : 0,
  });
  const started = now();
  const progress: GoBuildSummary = {
    downloads: 0,
    compiled: 0,
    count: undefined,
    mainCompiled: false,
    heartbeats: 0,
  };
  const beat = () => {
    const line = formatGoProgress(command.label, progress, now() - started);
    if (status.update(line)) progress.heartbeats++;
  };
  const args = ["build", "-v", ...command.flags, command.pkg];
  const child = new Deno.Command("go", {
    args,
    cwd: command.cwd,
    env: command.env,
    stdin: "null",
    stdout: "inherit",
    stderr: "piped",
  }).spawn();
  const lister = new Deno.Command("go", {
    args: [
      "list",
      "-deps",
      ...(command.flags.includes("-trimpath") ? ["-trimpath"] : []),
      "-f",
      GO_LIST_FORMAT,
      command.pkg,
    ],
    cwd: command.cwd,
    env: command.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // What was compiled before go list answered, which it may have seen
  // cached already.
  const compiledEarly: string[] = [];
  const listed = lister.output().then((output) => {
    // Without a count the heartbeat still shows what was compiled.
    if (output.success) {
      progress.count = countPackages(
        new TextDecoder().decode(output.stdout),
        compiledEarly,
      );
      if (compiledEarly.includes(progress.count.main ?? "")) {
        progress.mainCompiled = true;
      }
    }
  });
  const ticker = setInterval(beat, options.tickMs ?? 1_000);
  try {
    for await (const line of readLines(child.stderr)) {
      const parsed = parseGoBuildLine(line);
      if (parsed.kind === "package") {
        progress.compiled++;
        if (progress.count === undefined) compiledEarly.push(parsed.path);
        else if (parsed.path === progress.count.main) {
          progress.mainCompiled = true;
        }
      } else if (parsed.kind === "download") {
        progress.downloads++;
      } else {
        status.print(parsed.text, writeError);
      }
      beat();
    }
  } finally {
    clearInterval(ticker);
    status.clear();
    try {
      lister.kill();
    } catch {
      // it has exited
    }
    await listed;
  }
  const { code } = await child.status;
  if (code !== 0) {
    throw new Error(`'go ${args.join(" ")}' exited with ${code}`);
  }
  return progress;
}

/** The width of the terminal on standard output, or 0 if unknown. */
export function terminalColumns(): number {
  try {
    return Deno.consoleSize().columns;
  } catch {
    return 0;
  }
}

/** A writer of text to a file such as standard output, whole. */
function writeTo(file: { writeSync(p: Uint8Array): number }) {
  const encoder = new TextEncoder();
  return (text: string) => {
    const bytes = encoder.encode(text);
    for (let done = 0; done < bytes.length;) {
      done += file.writeSync(bytes.subarray(done));
    }
  };
}
