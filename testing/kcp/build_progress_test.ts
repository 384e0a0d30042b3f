import assert from "node:assert/strict";
import {
  buildWithProgress,
  countPackages,
  formatGoProgress,
  type GoBuildProgress,
  parseGoBuildLine,
  readLines,
  StatusLine,
} from "./build_progress.ts";

/** A clock the test moves by hand. */
function manualClock(start = 1_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => now += ms,
  };
}

function progress(fields: Partial<GoBuildProgress>): GoBuildProgress {
  return {
    downloads: 0,
    compiled: 0,
    count: undefined,
    mainCompiled: false,
    ...fields,
  };
}

Deno.test("countPackages() counts every package and those the build cache lacks", () => {
  const listed = [
    "internal/goarch\ttrue\tbuild ID mismatch",
    "unsafe\tfalse\t",
    "runtime\ttrue\tstale dependency: internal/goarch",
    "fmt\tfalse\t",
    "example.com/tiny\ttrue\tnot installed but available in build cache",
    "",
  ].join("\n");
  assert.deepEqual(countPackages(listed), {
    total: 5,
    toCompile: 2,
    main: "example.com/tiny",
  });
  // `go list -deps` without a format: every package counts as to compile.
  assert.deepEqual(countPackages("fmt\nexample.com/tiny\n"), {
    total: 2,
    toCompile: 2,
    main: "example.com/tiny",
  });
  // Compiled by the build before go list looked: cached by then, yet to
  // compile for this build.
  assert.deepEqual(countPackages(listed, ["fmt", "example.com/tiny"]), {
    total: 5,
    toCompile: 4,
    main: "example.com/tiny",
  });
  assert.deepEqual(countPackages(""), {
    total: 0,
    toCompile: 0,
    main: undefined,
  });
});

Deno.test("parseGoBuildLine() tells compiled packages and downloads from errors", () => {
  assert.deepEqual(parseGoBuildLine("github.com/kcp-dev/kcp/cmd/kcp"), {
    kind: "package",
    path: "github.com/kcp-dev/kcp/cmd/kcp",
  });
  assert.deepEqual(parseGoBuildLine("gopkg.in/evanphx/json-patch.v4"), {
    kind: "package",
    path: "gopkg.in/evanphx/json-patch.v4",
  });
  assert.deepEqual(parseGoBuildLine("runtime\r"), {
    kind: "package",
    path: "runtime",
  });
  assert.deepEqual(
    parseGoBuildLine("go: downloading github.com/spf13/cobra v1.9.1"),
    { kind: "download", module: "github.com/spf13/cobra v1.9.1" },
  );
  for (
    const text of [
      "# example.com/tiny",
      "./main.go:4:2: undefined: nope",
      "go: example.com/x@v1.0.0: reading https://proxy/x: 403 Forbidden",
      "",
    ]
  ) {
    assert.deepEqual(parseGoBuildLine(text), { kind: "other", text });
  }
});

Deno.test("formatGoProgress() says what the build is doing, with the time spent", () => {
  const label = "kcp:build: kcp";
  const count = { total: 2501, toCompile: 2480, main: "kcp/cmd/kcp" };
  assert.equal(
    formatGoProgress(label, progress({}), 999),
    "kcp:build: kcp: 0 s, loading packages",
  );
  assert.equal(
    formatGoProgress(label, progress({ downloads: 84 }), 10_400),
    "kcp:build: kcp: 10 s, downloading modules (84 so far)",
  );
  assert.equal(
    formatGoProgress(label, progress({ downloads: 84, count }), 20_000),
    "kcp:build: kcp: 20 s, downloading modules (84 so far)",
  );
  assert.equal(
    formatGoProgress(label, progress({ compiled: 12 }), 30_000),
    "kcp:build: kcp: 30 s, compiled 12 packages",
  );
  assert.equal(
    formatGoProgress(label, progress({ compiled: 1 }), 30_000),
    "kcp:build: kcp: 30 s, compiled 1 package",
  );
  assert.equal(
    formatGoProgress(label, progress({ compiled: 903, count }), 120_900),
    "kcp:build: kcp: 120 s, compiled 903 of 2480 packages (36%)",
  );
  assert.equal(
    formatGoProgress(
      label,
      progress({ compiled: 2480, count, mainCompiled: true }),
      410_000,
    ),
    "kcp:build: kcp: 410 s, compiled 2480 of 2480 packages, linking",
  );
  // go list thought fewer were to compile: the count follows the build.
  assert.equal(
    formatGoProgress(label, progress({ compiled: 2490, count }), 415_000),
    "kcp:build: kcp: 415 s, compiled 2490 of 2490 packages, linking",
  );
  assert.equal(
    formatGoProgress(
      label,
      progress({ count: { total: 2501, toCompile: 0, main: "m" } }),
      3_000,
    ),
    "kcp:build: kcp: 3 s, every package is in the build cache, linking",
  );
});

Deno.test("StatusLine off a terminal writes a line at most every interval, the first after one", () => {
  const clock = manualClock();
  const written: string[] = [];
  const status = new StatusLine({
    terminal: false,
    write: (text) => written.push(text),
    now: clock.now,
    intervalMs: 10_000,
  });
  assert.equal(status.update("at 0"), false, "a short wait prints nothing");
  clock.advance(9_999);
  assert.equal(status.update("at 9.999"), false);
  clock.advance(1);
  assert.equal(status.update("at 10"), true);
  clock.advance(5_000);
  assert.equal(status.update("at 15"), false);
  clock.advance(4_999);
  assert.equal(status.update("at 19.999"), false);
  clock.advance(1);
  assert.equal(status.update("at 20"), true);
  status.print("an error");
  status.clear();
  assert.deepEqual(written, ["at 10\n", "at 20\n", "an error\n"]);
});

Deno.test("StatusLine on a terminal redraws one line in place and keeps printed lines above it", () => {
  const clock = manualClock();
  const written: string[] = [];
  const errors: string[] = [];
  const status = new StatusLine({
    terminal: true,
    write: (text) => written.push(text),
    now: clock.now,
    redrawMs: 200,
    columns: 20,
  });
  assert.equal(status.update("first"), true, "drawn at once");
  clock.advance(100);
  assert.equal(status.update("too soon"), false);
  clock.advance(100);
  assert.equal(status.update("a status longer than the terminal"), true);
  clock.advance(200);
  const dim = (text: string) => `\x1b[2m${text}\x1b[0m`;
  assert.equal(status.update(dim("dim, fits")), true);
  clock.advance(200);
  assert.equal(status.update(dim("a dim status too long")), true);
  status.print("an error", (text) => errors.push(text));
  status.clear();
  status.clear();
  assert.deepEqual(written, [
    "\r\x1b[Kfirst",
    "\r\x1b[Ka status longer ...",
    "\r\x1b[K\x1b[2mdim, fits\x1b[0m",
    "\r\x1b[Ka dim status too...",
    "\r\x1b[K",
    "a dim status too...",
    "\r\x1b[K",
  ]);
  assert.deepEqual(errors, ["an error\n"]);
});

Deno.test("readLines() splits a stream at line ends, across chunks", async () => {
  const encoder = new TextEncoder();
  const stream = ReadableStream.from(
    ["fm", "t\nrun", "time\r\n\nlast"].map((s) => encoder.encode(s)),
  );
  const lines: string[] = [];
  for await (const line of readLines(stream)) lines.push(line);
  assert.deepEqual(lines, ["fmt", "runtime", "", "last"]);
});

const hasGo = await new Deno.Command("go", { args: ["version"] }).output()
  .then((o) => o.success, () => false);

/**
 * A module of two packages whose source is new to the Go build cache, so
 * `go build -v` compiles exactly these two (and whatever of the standard
 * library the cache lacks, once).
 */
async function tinyModule(dir: string, body: string): Promise<void> {
  const fresh = crypto.randomUUID();
  await Deno.mkdir(`${dir}/inner`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/go.mod`,
    "module example.com/tiny\n\ngo 1.22\n",
  );
  await Deno.writeTextFile(
    `${dir}/inner/inner.go`,
    `package inner\n\n// Fresh is new to the build cache.\nconst Fresh = "${fresh}"\n`,
  );
  await Deno.writeTextFile(
    `${dir}/main.go`,
    `package main\n\nimport "example.com/tiny/inner"\n\nfunc main() {\n\t${body}\n}\n`,
  );
}

Deno.test({
  name:
    "buildWithProgress() counts what go build compiles against what go list says it will",
  ignore: !hasGo,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "build-progress-" });
    try {
      await tinyModule(dir, "println(inner.Fresh)");
      const written: string[] = [];
      const summary = await buildWithProgress({
        cwd: dir,
        env: { CGO_ENABLED: "0", GOFLAGS: "-mod=mod" },
        flags: ["-trimpath", "-o", `${dir}/tiny`],
        pkg: ".",
        label: "kcp:build: tiny",
      }, {
        terminal: false,
        write: (text) => written.push(text),
        writeError: (text) => written.push(`stderr: ${text}`),
        intervalMs: 1,
        tickMs: 5,
      });
      assert.ok((await Deno.stat(`${dir}/tiny`)).isFile);
      assert.equal(summary.count?.main, "example.com/tiny");
      assert.ok(summary.count.total > 10, "the standard library counts");
      assert.ok(summary.compiled >= 2, "inner and main were compiled");
      assert.equal(summary.compiled, summary.count.toCompile);
      assert.equal(summary.mainCompiled, true);
      assert.ok(summary.heartbeats > 0);
      assert.ok(written.every((line) => line.startsWith("kcp:build: tiny: ")));
      assert.ok(written.every((line) => line.endsWith("\n")));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "buildWithProgress() passes a compile error on and fails",
  ignore: !hasGo,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "build-progress-" });
    try {
      await tinyModule(dir, "println(inner.Missing)");
      const errors: string[] = [];
      await assert.rejects(
        buildWithProgress({
          cwd: dir,
          env: { CGO_ENABLED: "0", GOFLAGS: "-mod=mod" },
          flags: ["-trimpath", "-o", `${dir}/tiny`],
          pkg: ".",
          label: "kcp:build: tiny",
        }, {
          terminal: false,
          write: () => {},
          writeError: (text) => errors.push(text),
        }),
        /'go build -v -trimpath -o .* \.' exited with 1/,
      );
      assert.match(errors.join(""), /undefined: inner\.Missing/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
