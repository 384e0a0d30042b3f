import assert from "node:assert/strict";
import {
  DocShell,
  headingAnchor,
  leaveOutReason,
  markdownSections,
  operatorPath,
  outputMatches,
  type PathItem,
  sectionBlocks,
} from "./doc_shell.ts";

const GUIDE = `# A guide

## Names

\`\`\`sh
greet() { echo "hello $1"; }
\`\`\`

## 2. The first step

\`\`\`sh
greet one
\`\`\`

Save as \`thing.yaml\`:

\`\`\`yaml
kind: Thing
\`\`\`

\`\`\`yaml
kind: NotSaved
\`\`\`

**Check.** It is there:

\`\`\`sh
kubectl --kubeconfig a.kubeconfig get things
\`\`\`

\`\`\`
NAME   AGE
thing  5s
\`\`\`

\`\`\`sh
kubectl -n kcp get pods
\`\`\`

## 3. system:admin, and more

\`\`\`sh
# make <name> here
podman run image
\`\`\`

Within about 15 s:

\`\`\`sh
kubectl --kubeconfig a.kubeconfig delete thing x
\`\`\`

\`\`\`
Error from server (Conflict): no
\`\`\`

\`\`\`sh
grant <team group>
\`\`\`

\`\`\`sh
apply it
\`\`\`

If it fails, repeat it a few seconds later.

### An example under step 3

\`\`\`sh
kubectl --kubeconfig a.kubeconfig get examples
\`\`\`

\`\`\`sh
kubectl dependencies why thing/x
\`\`\`

It says what holds it (exit
code 1: held):

\`\`\`sh
kubectl dependencies why thing/x --kubeconfig a.kubeconfig
\`\`\`

\`\`\`
Thing x is held by:
\`\`\`

## On the plain path

1. **First.** Run the commands of [Names](#names). Then:

   \`\`\`sh
   greet plain
   \`\`\`

2. **Then** run the checks of [step 2](#2-the-first-step), then the commands
   of [step 3](#3-systemadmin-and-more).

## Later

\`\`\`sh
not on the path
\`\`\`
`;

Deno.test("headingAnchor() makes GitHub's anchors", () => {
  assert.equal(
    headingAnchor("3. system:admin of every shard"),
    "3-systemadmin-of-every-shard",
  );
  assert.equal(
    headingAnchor("On a plain `kcp start`, with tokens"),
    "on-a-plain-kcp-start-with-tokens",
  );
  assert.equal(headingAnchor("7. The rule's status"), "7-the-rules-status");
});

Deno.test("markdownSections() splits at every heading outside fences, blocks in list items unindented", () => {
  const sections = markdownSections(
    "intro\n\n## A\n\n```sh\n# not a heading\n```\n\n" +
      "1. item\n\n   ```sh\n   echo one\n     two\n   ```\n\n   after\n### B\n",
  );
  assert.deepEqual(sections.map((s) => s.heading), ["", "A", "B"]);
  const blocks = sectionBlocks(sections[1]!);
  assert.deepEqual(blocks.map((b) => b.text), [
    "# not a heading\n",
    "echo one\n  two\n",
  ]);
  assert.equal(blocks[1]!.line, 11);
  assert.match(blocks[1]!.before, /1\. item/);
  assert.match(blocks[1]!.after, /after/);
});

Deno.test("operatorPath() follows the section's references in order, leaving out what it says to", () => {
  const path = operatorPath(GUIDE, "On the plain path");
  const show = (i: PathItem) =>
    i.kind === "run"
      ? `run ${i.block.text.trim()}${i.expected ? " =>" : ""}${
        i.mustFail ? " fails" : ""
      }${i.exitCode === undefined ? "" : ` exit ${i.exitCode}`}${
        i.retryMs ? ` retry ${i.retryMs}` : ""
      }`
      : i.kind === "save"
      ? `save ${i.file}`
      : `skip ${i.block.text.trim().split("\n").at(-1)}: ${i.reason}`;
  assert.deepEqual(path.map(show), [
    'run greet() { echo "hello $1"; }',
    "run greet plain",
    "run kubectl --kubeconfig a.kubeconfig get things =>",
    "skip kubectl -n kcp get pods: talks to the hosting cluster (kubectl without --kubeconfig)",
    "skip podman run image: runs the image (podman)",
    "run kubectl --kubeconfig a.kubeconfig delete thing x => fails retry 30000",
    "skip grant <team group>: holds the placeholder <team group>",
    "run apply it retry 20000",
    "run kubectl --kubeconfig a.kubeconfig get examples",
    "skip kubectl dependencies why thing/x: talks to the hosting cluster (kubectl without --kubeconfig)",
    "run kubectl dependencies why thing/x --kubeconfig a.kubeconfig => fails exit 1",
  ]);
  assert.deepEqual(
    operatorPath(GUIDE, "2. The first step").map(show).slice(0, 2),
    ["run greet one", "save thing.yaml"],
  );
  assert.throws(
    () =>
      operatorPath(
        GUIDE.replace("(#names)", "(#nowhere)"),
        "On the plain path",
      ),
    /#nowhere: no such heading/,
  );
  assert.throws(() => operatorPath(GUIDE, "Missing"), /no section/);
});

Deno.test("leaveOutReason() reads commands, not comments or flags of other commands", () => {
  assert.equal(
    leaveOutReason('kcpctl() { kubectl --kubeconfig "$K" "$@"; }\n'),
    undefined,
  );
  assert.equal(
    leaveOutReason("# kcpctl <workspace path> <args>\nkcpctl root get ws\n"),
    undefined,
  );
  assert.match(
    leaveOutReason("X=$(kubectl get secret x)\n")!,
    /hosting cluster/,
  );
  assert.match(
    leaveOutReason("kcpctl root get x | \\\n  kubectl apply -f -\n")!,
    /hosting cluster/,
  );
  assert.match(leaveOutReason("docker push x\n")!, /image/);
  assert.equal(
    leaveOutReason("kubectl dependencies why vpc/a --kubeconfig k\n"),
    undefined,
  );
  assert.match(
    leaveOutReason("kubectl dependencies why vpc/a\n")!,
    /hosting cluster/,
  );
});

Deno.test("outputMatches() wants each line in order, allows added words and any age", () => {
  const table = "NAME   READY   AGE\nrule   True    5s\n";
  assert.ok(outputMatches(table, "NAME  READY  AGE\nrule  True  2m3s\n"));
  assert.ok(!outputMatches(table, "NAME  READY  AGE\nrule  False  2s\n"));
  assert.ok(!outputMatches(table, "rule  True  2s\nNAME  READY  AGE\n"));
  assert.ok(
    outputMatches(
      'vpc "a" deleted\n',
      'warning: x\nvpc "a" deleted from default namespace\n',
    ),
  );
  assert.ok(!outputMatches('vpc "a" deleted\n', 'vpc "b" deleted\n'));
  assert.ok(outputMatches("a\tb\tc d\n", "a b   c d\n"));
});

Deno.test("outputMatches() reads a <placeholder> in a word as any characters", () => {
  const tree = "`-- by vm-2 (rule <cluster>/vm-subnets), nothing holds it\n";
  assert.ok(
    outputMatches(
      tree,
      "`-- by vm-2 (rule 2x7ilq/vm-subnets), nothing holds it",
    ),
  );
  assert.ok(!outputMatches(tree, "`-- by vm-2 (rule 2x7ilq/vm-nets), nothing"));
  assert.ok(!outputMatches(tree, "`-- by vm-2 (rule /vm-subnets), nothing"));
  assert.ok(!outputMatches("a.<x>\n", "abc\n"));
});

Deno.test("DocShell keeps functions and variables between blocks, fails a block at its failing command, stops what blocks start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "doc-shell-test-" });
  const shell = new DocShell({
    cwd: dir,
    stateDir: `${dir}/.shell`,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", GIVEN: "given" },
  });
  try {
    let run = await shell.run(
      'greet() { echo "hello $1"; }\nNAME=one\nexport SHARED=two\n',
    );
    assert.equal(run.code, 0, run.output);
    run = await shell.run(
      "greet \"$NAME $SHARED $GIVEN\"\nsh -c 'echo $SHARED'\n",
    );
    assert.deepEqual([run.code, run.output], [0, "hello one two given\ntwo\n"]);
    run = await shell.run("false | cat\necho not reached\n");
    assert.deepEqual([run.code, run.output], [1, ""]);
    run = await shell.run("echo before; exit 3\n");
    assert.deepEqual([run.code, run.output], [3, "before\n"]);
    run = await shell.run("sleep 30\n", 300);
    assert.equal(run.code, undefined);
    run = await shell.run("sleep 60 &\necho started\n");
    assert.deepEqual([run.code, run.output], [0, "started\n"]);
    assert.ok(await shell.jobsAlive());
    assert.match(await shell.backgroundLogs(), /started/);
    await shell.stop(2_000);
    assert.ok(!(await shell.jobsAlive()));
  } finally {
    await shell.stop(0);
    await Deno.remove(dir, { recursive: true });
  }
});
