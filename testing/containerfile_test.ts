import assert from "node:assert/strict";
import { compiles, parseContainerfile } from "./containerfile.ts";

Deno.test("Containerfile parser refuses a builder stage it cannot replay", () => {
  const valid = [
    "# a comment",
    "ARG DENO_VERSION=2.9.6",
    "FROM docker.io/denoland/deno:debian-${DENO_VERSION} AS build",
    "WORKDIR /src",
    "COPY deno.json deno.lock ./",
    "RUN deno install --frozen",
    "COPY controller.ts ./",
    "RUN deno compile --frozen --cached-only --v8-flags=--a=2 --allow-net \\",
    "      --output /out/controller controller.ts \\",
    " && deno compile --frozen --cached-only -A --unstable-net \\",
    "      -o /out/w ./webhook.ts",
    "FROM gcr.io/distroless/cc-debian12:nonroot",
    "COPY --from=build /out/controller /usr/local/bin/",
  ].join("\n");
  const parsed = parseContainerfile(valid);
  assert.equal(parsed.builder.image, "docker.io/denoland/deno:debian-2.9.6");
  assert.deepEqual(
    compiles(parsed).map((c) => [
      c.entrypoint,
      c.output,
      c.permissions,
      c.unstable,
      c.v8Flags,
    ]),
    [
      ["controller.ts", "/out/controller", ["--allow-net"], [], [
        "--v8-flags=--a=2",
      ]],
      ["webhook.ts", "/out/w", ["-A"], ["--unstable-net"], []],
    ],
  );
  const without = (pattern: RegExp) =>
    valid.split("\n").filter((l) => !pattern.test(l)).join("\n");
  const cases: [string, string, RegExp][] = [
    ["no COPY line", without(/^COPY (deno|controller)/), /no COPY line/],
    [
      "no compile",
      without(/compile|--output|-o \/out/),
      /no `deno compile`/,
    ],
    ["no install", without(/deno install/), /exactly one `deno install`/],
    [
      "a pipe",
      valid.replace("RUN deno install --frozen", "RUN deno install | cat"),
      /shell syntax `\|`/,
    ],
    [
      "a `;`",
      valid.replace("--frozen\n", "--frozen; true\n"),
      /shell syntax `;`/,
    ],
    ["ENV", valid.replace("WORKDIR /src", "ENV DENO_DIR=/x"), /ENV in the/],
    ["another command", valid.replace("deno install", "npm ci"), /npm ci/],
    [
      "no --output",
      valid.replace("-o /out/w", ""),
      /exactly one --output/,
    ],
    ["no runtime COPY", without(/--from=build/), /copy from one builder/],
  ];
  for (const [what, text, error] of cases) {
    assert.throws(() => parseContainerfile(text), error, what);
  }
});
