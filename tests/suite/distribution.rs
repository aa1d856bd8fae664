//! How kapi reaches a user's machine and CI: the composite action
//! (action.yml) run step by step as GitHub runs it, the release archive it
//! installs checked against SHA256SUMS, the pre-commit framework's hooks,
//! and the docs' snippets held to the files they name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use super::sync::{counted_by_ci, pair, pushed_suggestion};
use crate::common::{Run, TestEnv, kapi_bin};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn load_yaml(path: &Path) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap();
    YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .remove(0)
}

fn str_of(yaml: &Yaml) -> String {
    match yaml {
        Yaml::String(s) => s.clone(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Null | Yaml::BadValue => String::new(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// Cargo.toml's `repository`, as `owner/name` on GitHub.
fn github_repository() -> String {
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(manifest_dir().join("Cargo.toml")).unwrap())
            .unwrap();
    let url = manifest["package"]["repository"].as_str().unwrap();
    url.strip_prefix("https://github.com/")
        .unwrap_or_else(|| panic!("the repository is not on GitHub: {url}"))
        .to_owned()
}

/// The target triple of the release archive for this machine, as
/// ci/install-release names it.
fn release_target() -> Option<String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        _ => return None,
    };
    match std::env::consts::OS {
        "linux" => Some(format!("{arch}-unknown-linux-musl")),
        "macos" => Some(format!("{arch}-apple-darwin")),
        _ => None,
    }
}

/// A release folder as the release workflow publishes it: this build's
/// `kapi` and `git-kapi` in `kapi-vX.Y.Z-<target>.tar.gz`, and SHA256SUMS.
fn release_folder(root: &Path, target: &str) -> PathBuf {
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("kapi-v{version}-{target}");
    let release = root.join("release");
    let staged = release.join(&name);
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::copy(kapi_bin(), staged.join("kapi")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_git-kapi"), staged.join("git-kapi")).unwrap();
    let archive = format!("{name}.tar.gz");
    let tar = Command::new("tar")
        .current_dir(&release)
        .args(["-czf", &archive, &name])
        .status()
        .unwrap();
    assert!(tar.success());
    std::fs::remove_dir_all(&staged).unwrap();
    let sums = Command::new("sha256sum")
        .current_dir(&release)
        .arg(&archive)
        .output()
        .unwrap();
    assert!(sums.status.success());
    std::fs::write(release.join("SHA256SUMS"), sums.stdout).unwrap();
    release
}

/// action.yml's steps run as a GitHub runner runs a composite action:
/// each step's `run` by `bash --noprofile --norc -eo pipefail`, its `env`
/// with the `${{ … }}` expressions the action uses evaluated (an
/// expression this runner does not know fails the test, so a new one is
/// seen here), `GITHUB_OUTPUT` read into the step's outputs and
/// `GITHUB_PATH` prepended to the next steps' `PATH`.
struct ActionRun {
    steps: Vec<Run>,
    outputs: BTreeMap<String, String>,
}

fn run_action(
    env: &TestEnv,
    inputs: &[(&str, &str)],
    github: &[(&str, &str)],
    base_path: &str,
) -> ActionRun {
    let action = load_yaml(&manifest_dir().join("action.yml"));
    assert_eq!(str_of(&action["runs"]["using"]), "composite");
    let runner = env.root().join("runner");
    std::fs::create_dir_all(&runner).unwrap();
    let github_path = runner.join("github_path");
    std::fs::write(&github_path, "").unwrap();
    let mut github: BTreeMap<String, String> = github
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    github.insert(
        "action_path".into(),
        manifest_dir().to_str().unwrap().into(),
    );
    // Inputs: those given, else the defaults (themselves expressions).
    let mut values = BTreeMap::new();
    for (name, spec) in action["inputs"].as_hash().unwrap() {
        let name = str_of(name);
        let given = inputs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let value = match given {
            Some(v) => v.to_owned(),
            None => evaluate(&str_of(&spec["default"]), &BTreeMap::new(), &github, &[]),
        };
        values.insert(name, value);
    }
    for (name, _) in inputs {
        assert!(values.contains_key(*name), "action.yml has no input {name}");
    }
    let mut outputs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut runs = Vec::new();
    for (i, step) in action["runs"]["steps"].as_vec().unwrap().iter().enumerate() {
        assert_eq!(str_of(&step["shell"]), "bash", "step {i}");
        let script = runner.join(format!("step{i}.sh"));
        std::fs::write(&script, str_of(&step["run"])).unwrap();
        let output_file = runner.join(format!("output{i}"));
        std::fs::write(&output_file, "").unwrap();
        let mut cmd = Command::new("bash");
        env.isolate(&mut cmd);
        let added: Vec<String> = std::fs::read_to_string(&github_path)
            .unwrap()
            .lines()
            .rev()
            .map(str::to_owned)
            .collect();
        let path = added
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(base_path))
            .collect::<Vec<_>>()
            .join(":");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .env("PATH", path)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_PATH", &github_path)
            .env("RUNNER_TEMP", &runner)
            .env("GITHUB_ACTION_PATH", manifest_dir());
        if let Some(vars) = step["env"].as_hash() {
            for (name, value) in vars {
                let steps: Vec<(&str, &BTreeMap<String, String>)> =
                    outputs.iter().map(|(k, v)| (k.as_str(), v)).collect();
                cmd.env(
                    str_of(name),
                    evaluate(&str_of(value), &values, &github, &steps),
                );
            }
        }
        let run: Run = cmd.output().unwrap().into();
        let failed = run.code != 0;
        if let Yaml::String(id) = &step["id"] {
            let written = std::fs::read_to_string(&output_file).unwrap();
            let pairs = written
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            outputs.insert(id.clone(), pairs);
        }
        runs.push(run);
        if failed {
            break; // a failed step ends the job
        }
    }
    // The action's own outputs.
    let mut action_outputs = BTreeMap::new();
    if let Some(declared) = action["outputs"].as_hash() {
        for (name, spec) in declared {
            let steps: Vec<(&str, &BTreeMap<String, String>)> =
                outputs.iter().map(|(k, v)| (k.as_str(), v)).collect();
            let value = evaluate(&str_of(&spec["value"]), &values, &github, &steps);
            action_outputs.insert(str_of(name), value);
        }
    }
    ActionRun {
        steps: runs,
        outputs: action_outputs,
    }
}

/// `text` with each `${{ expr }}` replaced: `inputs.X`, `github.X`,
/// `steps.ID.outputs.X`; anything else fails the test.
fn evaluate(
    text: &str,
    inputs: &BTreeMap<String, String>,
    github: &BTreeMap<String, String>,
    steps: &[(&str, &BTreeMap<String, String>)],
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .unwrap_or_else(|| panic!("unclosed expression in {text:?}"))
            + start;
        let expr = rest[start + 3..end].trim();
        let value = if let Some(name) = expr.strip_prefix("inputs.") {
            inputs.get(name).cloned()
        } else if let Some(name) = expr.strip_prefix("github.") {
            github.get(name).cloned()
        } else if let Some(path) = expr.strip_prefix("steps.") {
            path.split_once(".outputs.").and_then(|(id, name)| {
                steps
                    .iter()
                    .find(|(i, _)| *i == id)
                    .map(|(_, o)| o.get(name).cloned().unwrap_or_default())
            })
        } else {
            None
        };
        out.push_str(&value.unwrap_or_else(|| panic!("unknown expression `{expr}` in {text:?}")));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// PATH for the runner: the system's tools (git, curl, tar, sha256sum),
/// and no kapi, so the action must install the one it runs.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn no_kapi_on(path: &str) {
    for dir in path.split(':') {
        if Path::new(dir).join("kapi").exists() {
            panic!("{dir}/kapi exists: the runner's PATH must hold no kapi");
        }
    }
}

#[test]
fn the_action_installs_a_checked_release_and_runs_the_ci_step_on_a_clone_with_a_bare_remote() {
    let Some(target) = release_target() else {
        println!("skipped: kapi publishes no release for this machine");
        return;
    };
    no_kapi_on(SYSTEM_PATH);
    let (p, legal, before, after) = pushed_suggestion();
    // The CI job: a fresh clone of the remote (actions/checkout), then the
    // action, with the release served from a folder.
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let release = release_folder(ci.root(), &target);
    let url = format!("file://{}", release.display());
    let atlas = ci.root().join("site");
    let run = run_action(
        &ci,
        &[
            ("download-url", url.as_str()),
            ("atlas", atlas.to_str().unwrap()),
        ],
        &[("event.before", before.as_str()), ("sha", after.as_str())],
        SYSTEM_PATH,
    );
    for (i, step) in run.steps.iter().enumerate() {
        assert_eq!(step.code, 0, "step {i}:\n{}\n{}", step.stdout, step.stderr);
    }
    assert_eq!(run.steps.len(), 2);
    // It published the atlas of the synced log.
    let page = std::fs::read_to_string(atlas.join("index.html")).unwrap();
    assert!(page.contains("Content-Security-Policy"));
    assert!(atlas.join("atlas.json").exists());
    // The kapi that ran is the one installed from the archive.
    let installed = PathBuf::from(&run.outputs["kapi"]);
    assert!(
        installed.starts_with(ci.root().join("runner")),
        "{installed:?}"
    );
    assert!(installed.with_file_name("git-kapi").exists());
    assert!(
        run.steps[1].stderr.is_empty() || !run.steps[1].stderr.contains("error"),
        "{}",
        run.steps[1].stderr
    );
    // The step counted the merge as the tool ci and pushed the log.
    let signal = counted_by_ci(&p, &legal);
    assert!(signal.to_string().contains("77"), "{signal}");
}

#[test]
fn the_action_refuses_an_archive_that_does_not_match_its_checksum_and_installs_nothing() {
    let Some(target) = release_target() else {
        println!("skipped: kapi publishes no release for this machine");
        return;
    };
    let p = pair();
    let head = p.a.git(&["rev-parse", "HEAD"]);
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let release = release_folder(ci.root(), &target);
    // A tampered archive (a mirror, a cache): one byte changed after the
    // checksums were made.
    let archive = release.join(format!(
        "kapi-v{}-{target}.tar.gz",
        env!("CARGO_PKG_VERSION")
    ));
    let mut bytes = std::fs::read(&archive).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let url = format!("file://{}", release.display());
    let run = run_action(
        &ci,
        &[("download-url", url.as_str())],
        &[("event.before", head.as_str()), ("sha", head.as_str())],
        SYSTEM_PATH,
    );
    assert_eq!(run.steps.len(), 1, "the job stops at the install");
    assert_ne!(run.steps[0].code, 0);
    assert!(
        run.steps[0].stderr.contains("does not match SHA256SUMS"),
        "{}",
        run.steps[0].stderr
    );
    assert!(!ci.root().join("runner/kapi-bin/kapi").exists());
    // A release that does not exist is named with what to pass instead.
    let missing = format!("file://{}", ci.root().join("nowhere").display());
    let run = run_action(
        &ci,
        &[
            ("download-url", missing.as_str()),
            ("version", "9.9.9"),
            ("build-if-unreleased", "false"),
        ],
        &[("event.before", head.as_str()), ("sha", head.as_str())],
        SYSTEM_PATH,
    );
    assert_ne!(run.steps[0].code, 0);
    assert!(
        run.steps[0].stderr.contains("is v9.9.9 released for"),
        "{}",
        run.steps[0].stderr
    );
}

#[test]
fn an_unreleased_version_is_built_from_the_action_s_own_source() {
    // The action used at a branch before its release: no archive, so it
    // runs `cargo install` on its own checkout. A stand-in cargo records
    // the command and places the binary under test where it was asked to.
    let p = pair();
    let head = p.a.git(&["rev-parse", "HEAD"]);
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let fake = ci.root().join("fake-cargo");
    std::fs::create_dir_all(&fake).unwrap();
    let record = ci.root().join("cargo-args");
    std::fs::write(
        fake.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\nmkdir -p \"$root/bin\" && cp '{}' \"$root/bin/kapi\"\n",
            record.display(),
            kapi_bin().display()
        ),
    )
    .unwrap();
    let mut mode = std::fs::metadata(fake.join("cargo")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(fake.join("cargo"), mode).unwrap();
    let missing = format!("file://{}", ci.root().join("nowhere").display());
    let path = format!("{}:{SYSTEM_PATH}", fake.display());
    let run = run_action(
        &ci,
        &[("download-url", missing.as_str()), ("version", "9.9.9")],
        &[("event.before", head.as_str()), ("sha", head.as_str())],
        &path,
    );
    for (i, step) in run.steps.iter().enumerate() {
        assert_eq!(step.code, 0, "step {i}: {}{}", step.stdout, step.stderr);
    }
    assert!(
        run.steps[0].stdout.contains("::warning::no kapi release"),
        "{}",
        run.steps[0].stdout
    );
    let args = std::fs::read_to_string(&record).unwrap();
    let build = ci.root().join("runner/kapi-build");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "install",
            "--locked",
            "--quiet",
            "--path",
            manifest_dir().to_str().unwrap(),
            "--root",
            build.to_str().unwrap()
        ]
    );
    assert_eq!(PathBuf::from(&run.outputs["kapi"]), build.join("bin/kapi"));
}

#[test]
fn the_action_runs_the_kapi_on_path_when_told_not_to_install() {
    let p = pair();
    let head = p.a.git(&["rev-parse", "HEAD"]);
    let ci = TestEnv::clone_of(&p.remote, "Ada", "ada@example.com");
    let with_kapi = format!("{}:{SYSTEM_PATH}", kapi_bin().parent().unwrap().display());
    let run = run_action(
        &ci,
        &[("install", "false")],
        &[("event.before", head.as_str()), ("sha", head.as_str())],
        &with_kapi,
    );
    assert!(
        run.steps.iter().all(|s| s.code == 0),
        "{:?}",
        run.steps.iter().map(|s| &s.stderr).collect::<Vec<_>>()
    );
    assert_eq!(PathBuf::from(&run.outputs["kapi"]), kapi_bin());
    // Without one, it says so and stops.
    let run = run_action(
        &ci,
        &[("install", "false")],
        &[("event.before", head.as_str()), ("sha", head.as_str())],
        SYSTEM_PATH,
    );
    assert_eq!(run.steps.len(), 1);
    assert!(
        run.steps[0].stdout.contains("no kapi is on PATH"),
        "{}",
        run.steps[0].stdout
    );
}

/// The YAML of the fenced block that follows `heading` in a doc.
fn yaml_after(doc: &str, heading: &str) -> Yaml {
    let text = std::fs::read_to_string(manifest_dir().join(doc)).unwrap();
    let from = text
        .find(heading)
        .unwrap_or_else(|| panic!("{doc} has no {heading:?}"));
    let block = &text[from..];
    let start = block.find("```yaml\n").unwrap() + "```yaml\n".len();
    let end = start + block[start..].find("```").unwrap();
    YamlLoader::load_from_str(&block[start..end])
        .unwrap()
        .remove(0)
}

#[test]
fn the_docs_workflow_uses_this_repository_s_action_at_this_version_with_its_inputs() {
    let workflow = yaml_after("docs/sync.md", "### GitHub Actions");
    let action = load_yaml(&manifest_dir().join("action.yml"));
    let inputs: Vec<String> = action["inputs"]
        .as_hash()
        .unwrap()
        .keys()
        .map(str_of)
        .collect();
    let wanted = format!("{}@v{}", github_repository(), env!("CARGO_PKG_VERSION"));
    let steps = workflow["jobs"]
        .as_hash()
        .unwrap()
        .values()
        .flat_map(|job| job["steps"].as_vec().unwrap().iter())
        .collect::<Vec<_>>();
    let uses: Vec<&Yaml> = steps
        .iter()
        .copied()
        .filter(|s| str_of(&s["uses"]).starts_with(&github_repository()))
        .collect();
    assert_eq!(uses.len(), 1, "{steps:?}");
    assert_eq!(str_of(&uses[0]["uses"]), wanted);
    if let Some(with) = uses[0]["with"].as_hash() {
        for key in with.keys() {
            assert!(
                inputs.contains(&str_of(key)),
                "{key:?} is no input of action.yml"
            );
        }
    }
    // Checked out with its history, so BEFORE is in the clone.
    let checkout = steps
        .iter()
        .find(|s| str_of(&s["uses"]).starts_with("actions/checkout@"))
        .unwrap();
    assert_eq!(str_of(&checkout["with"]["fetch-depth"]), "0");
}

/// The `pre-commit` of ci/run's virtual environment, else one on PATH.
fn pre_commit() -> Option<PathBuf> {
    let venv = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/kapi-venv/bin/pre-commit"))
        .filter(|p| p.exists());
    venv.or_else(|| {
        Command::new("pre-commit")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("pre-commit"))
    })
}

/// The hook ids `.pre-commit-hooks.yaml` offers, with their language.
fn manifest_hooks(text: &str) -> Vec<(String, String)> {
    YamlLoader::load_from_str(text).unwrap()[0]
        .as_vec()
        .unwrap()
        .iter()
        .map(|h| (str_of(&h["id"]), str_of(&h["language"])))
        .collect()
}

#[test]
fn the_pre_commit_framework_runs_the_installed_kapi_and_fails_a_violating_commit() {
    let Some(pre_commit) = pre_commit() else {
        println!(
            "skipped: no pre-commit (ci/run installs it: ~/.cache/kapi-venv/bin/pip install pre-commit)"
        );
        return;
    };
    let env = TestEnv::new();
    // kapi's repository as pre-commit clones it: this tree's manifest,
    // committed, at a rev.
    let hooks_repo = env.root().join("kapi-hooks");
    std::fs::create_dir_all(&hooks_repo).unwrap();
    let manifest = std::fs::read_to_string(manifest_dir().join(".pre-commit-hooks.yaml")).unwrap();
    std::fs::write(hooks_repo.join(".pre-commit-hooks.yaml"), &manifest).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let mut cmd = env.git_cmd(args);
        cmd.current_dir(dir);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&hooks_repo, &["init", "-q", "-b", "main"]);
    git(&hooks_repo, &["add", "-A"]);
    git(
        &hooks_repo,
        &[
            "-c",
            "user.name=kapi",
            "-c",
            "user.email=kapi@example.com",
            "commit",
            "-qm",
            "hooks",
        ],
    );
    let rev = git(&hooks_repo, &["rev-parse", "HEAD"]);
    let hooks = manifest_hooks(&manifest);
    let system: Vec<&str> = hooks
        .iter()
        .filter(|(_, language)| language == "system")
        .map(|(id, _)| id.as_str())
        .collect();
    assert!(system.contains(&"kapi-pre-commit-system"), "{hooks:?}");
    assert!(
        hooks
            .iter()
            .any(|(id, l)| id == "kapi-pre-commit" && l == "rust"),
        "{hooks:?}"
    );
    // The user's project: a kept rule, pre-commit installed from its config.
    env.write(
        ".pre-commit-config.yaml",
        &format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: kapi-pre-commit-system\n",
            hooks_repo.display()
        ),
    );
    env.write("docs/intro.md", "# Intro\n\nQuickcast streams.\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "docs"]);
    env.kept_rule("Quickcast", "Quick cast");
    let pre_commit_cmd = |args: &[&str]| {
        let mut cmd = Command::new(&pre_commit);
        env.isolate(&mut cmd);
        cmd.args(args)
            .env("PRE_COMMIT_HOME", env.root().join("pre-commit-cache"))
            .env("PRE_COMMIT_COLOR", "never");
        let run: Run = cmd.output().unwrap().into();
        run
    };
    let validated = pre_commit_cmd(&[
        "validate-manifest",
        hooks_repo.join(".pre-commit-hooks.yaml").to_str().unwrap(),
    ]);
    assert_eq!(
        validated.code, 0,
        "{}{}",
        validated.stdout, validated.stderr
    );
    let installed = pre_commit_cmd(&["install"]);
    assert_eq!(
        installed.code, 0,
        "{}{}",
        installed.stdout, installed.stderr
    );
    // A violating commit fails with kapi's finding; git commits nothing.
    env.write("docs/intro.md", "# Intro\n\nQuick cast streams.\n");
    env.git(&["add", "docs/intro.md"]);
    let head = env.git(&["rev-parse", "HEAD"]);
    let mut commit = env.git_cmd(&["commit", "-qm", "Quick cast"]);
    commit.env("PRE_COMMIT_HOME", env.root().join("pre-commit-cache"));
    let refused: Run = commit.output().unwrap().into();
    assert_ne!(refused.code, 0, "{}{}", refused.stdout, refused.stderr);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        said.contains("Quick cast") && said.contains("Quickcast"),
        "{said}"
    );
    assert_eq!(env.git(&["rev-parse", "HEAD"]), head);
    // Fixed, it commits.
    env.write("docs/intro.md", "# Intro\n\nQuickcast streams well.\n");
    env.git(&["add", "docs/intro.md"]);
    let mut commit = env.git_cmd(&["commit", "-qm", "Quickcast"]);
    commit.env("PRE_COMMIT_HOME", env.root().join("pre-commit-cache"));
    let passed: Run = commit.output().unwrap().into();
    assert_eq!(passed.code, 0, "{}{}", passed.stdout, passed.stderr);
}

#[test]
fn the_docs_pre_commit_snippet_names_this_repository_and_a_rev_that_offers_its_hooks() {
    let snippet = yaml_after("docs/hooks.md", "**pre-commit**");
    let repo = &snippet["repos"][0];
    assert_eq!(
        str_of(&repo["repo"]),
        format!("https://github.com/{}", github_repository())
    );
    let rev = str_of(&repo["rev"]);
    let ids: Vec<String> = repo["hooks"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|h| str_of(&h["id"]))
        .collect();
    // The rev is a commit of this repository; its manifest offers the ids.
    // (A shallow clone may lack it: then only the current manifest is
    // held to the ids.)
    let show = Command::new("git")
        .current_dir(manifest_dir())
        .args(["show", &format!("{rev}:.pre-commit-hooks.yaml")])
        .env_remove("GIT_DIR")
        .output()
        .unwrap();
    let shallow = manifest_dir().join(".git/shallow").exists();
    let manifest = if show.status.success() {
        String::from_utf8(show.stdout).unwrap()
    } else {
        assert!(
            shallow || !manifest_dir().join(".git").exists(),
            "rev {rev} of docs/hooks.md is not in this repository's history: {}",
            String::from_utf8_lossy(&show.stderr)
        );
        std::fs::read_to_string(manifest_dir().join(".pre-commit-hooks.yaml")).unwrap()
    };
    let offered: Vec<String> = manifest_hooks(&manifest)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    for id in &ids {
        assert!(
            offered.contains(id),
            "{id} is not in the manifest at {rev}: {offered:?}"
        );
    }
}

/// The release workflow and Cargo.toml's binstall metadata name the same
/// archives action.yml's installer downloads.
#[test]
fn the_release_workflow_builds_every_target_the_installer_and_binstall_download() {
    let release = load_yaml(&manifest_dir().join(".github/workflows/release.yml"));
    let targets: Vec<String> = release["jobs"]["build"]["strategy"]["matrix"]["include"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|t| str_of(&t["target"]))
        .collect();
    let installer = std::fs::read_to_string(manifest_dir().join("ci/install-release")).unwrap();
    for wanted in [
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
        "x86_64-pc-windows-msvc",
    ] {
        assert!(
            targets.iter().any(|t| t == wanted),
            "{wanted} not built: {targets:?}"
        );
    }
    // Every target the installer can name (`$arch-…`) is built for both arches.
    for suffix in ["-unknown-linux-musl", "-apple-darwin"] {
        assert!(installer.contains(&format!("$arch{suffix}")), "{suffix}");
    }
    // Fetched alone, the installer falls back to its copy of the home.
    assert!(
        installer.contains(&format!(
            "repository=\"https://github.com/{}\"",
            github_repository()
        )),
        "ci/install-release's fallback repository is not Cargo.toml's"
    );
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(manifest_dir().join("Cargo.toml")).unwrap())
            .unwrap();
    let binstall = &manifest["package"]["metadata"]["binstall"];
    assert_eq!(
        binstall["pkg-url"].as_str().unwrap(),
        "{ repo }/releases/download/v{ version }/kapi-v{ version }-{ target }{ archive-suffix }"
    );
    let package = release["jobs"]["build"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| str_of(&s["name"]) == "Package")
        .map(|s| str_of(&s["run"]))
        .unwrap();
    assert!(
        package.contains(r#"name="kapi-v$VERSION-$TARGET""#),
        "{package}"
    );
}
