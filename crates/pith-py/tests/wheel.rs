//! The Python test: builds the `pith` wheel with maturin, installs it into
//! a fresh virtual environment (`<target>/tmp/pyenv-pith`, recreated on
//! every run) with pytest and mypy, and runs the pytest suite
//! (`tests/test_*.py`) against it (the suite checks the type stubs against
//! the module with mypy's stubtest).
//!
//! maturin and pytest come from PyPI, into a tools environment
//! (`<target>/tmp/pyenv-pith-tools`, kept between runs; or the one
//! `PITH_PY_TOOLS` names, as `.ci/run` makes). Without
//! `python3`, or when the packages cannot be installed, the test prints why
//! and passes, unless `PITH_REQUIRE_PYTHON=1` (as in CI): then it fails.
//!
//! The wheel is built with the `dev` profile into a target directory of
//! its own (`<target>/pith-py-wheel`: a nested cargo must not wait for the
//! lock of the one running this test): an unoptimized build takes about a
//! minute on two cores from scratch, a release one several. Set
//! `PITH_PY_PROFILE=release` to test a release wheel, and `PITH_PYTHON3`
//! to use another interpreter than `python3` (3.9 or later).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Fails when `PITH_REQUIRE_PYTHON=1`, otherwise prints a skip message.
fn skip(reason: &str) {
    if std::env::var("PITH_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("PITH_REQUIRE_PYTHON=1 but the Python test cannot run: {reason}");
    }
    println!(
        "pith-py wheel test skipped: {reason} (set PITH_REQUIRE_PYTHON=1 to make this a failure)"
    );
}

/// Runs `cmd`, returning its combined output, or `Err` with it when it
/// fails to start or exits non-zero.
fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    match cmd.output() {
        Err(e) => Err(format!("{shown}: {e}")),
        Ok(out) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if out.status.success() {
                Ok(text)
            } else {
                Err(format!("{shown} failed ({}):\n{text}", out.status))
            }
        }
    }
}

/// The `python` of virtual environment `venv`.
fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// Creates virtual environment `venv` with `python` (fresh: an old one is
/// removed first when `fresh`) and installs `packages` into it.
fn make_venv(python: &str, venv: &Path, fresh: bool, packages: &[&str]) -> Result<(), String> {
    if fresh && venv.exists() {
        std::fs::remove_dir_all(venv).map_err(|e| format!("removing {}: {e}", venv.display()))?;
    }
    if !venv_python(venv).exists() {
        run(Command::new(python).args(["-m", "venv"]).arg(venv))?;
    }
    if !packages.is_empty() {
        let mut pip = Command::new(venv_python(venv));
        pip.args(["-m", "pip", "install", "-q", "--disable-pip-version-check"]);
        run(pip.args(packages))?;
    }
    Ok(())
}

#[test]
fn wheel_in_fresh_venv_passes_pytest() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let python = std::env::var("PITH_PYTHON3").unwrap_or_else(|_| "python3".into());
    let version = match run(Command::new(&python).args([
        "-c",
        "import sys; assert sys.version_info >= (3, 9), sys.version; print(sys.version.split()[0])",
    ])) {
        Ok(v) => v,
        Err(e) => return skip(&format!("no usable python3 (3.9 or later): {e}")),
    };
    println!("python {}", version.trim());

    // maturin and pytest, kept between runs.
    let tools = match std::env::var_os("PITH_PY_TOOLS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let tools = tmp.join("pyenv-pith-tools");
            if let Err(e) = make_venv(&python, &tools, false, &["maturin>=1.5,<2", "pytest"]) {
                return skip(&format!("cannot install maturin and pytest from PyPI: {e}"));
            }
            tools
        }
    };
    let maturin = tools.join("bin").join("maturin");

    // The wheel.
    let profile = std::env::var("PITH_PY_PROFILE").unwrap_or_else(|_| "dev".into());
    let wheels = tmp.join("pith-py-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    let target = tmp.parent().unwrap_or(tmp).join("pith-py-wheel");
    let started = std::time::Instant::now();
    let built = run(Command::new(&maturin)
        .args(["build", "--profile", &profile, "-i"])
        .arg(venv_python(&tools))
        .arg("-m")
        .arg(crate_dir.join("Cargo.toml"))
        .arg("--out")
        .arg(&wheels)
        .env("CARGO_TARGET_DIR", &target));
    if let Err(e) = built {
        panic!("maturin build failed: {e}");
    }
    let wheel = std::fs::read_dir(&wheels)
        .expect("maturin's output directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    let name = wheel.file_name().map(|n| n.to_string_lossy().into_owned());
    println!(
        "built {} ({profile} profile) in {:.1} s",
        name.as_deref().unwrap_or("?"),
        started.elapsed().as_secs_f64()
    );
    assert!(
        name.as_deref().is_some_and(|n| n.contains("-cp39-abi3-")),
        "the wheel is not abi3 for 3.9+: {name:?}"
    );

    // A fresh environment with the wheel and pytest, and the suite.
    let venv = tmp.join("pyenv-pith");
    let wheel_arg = wheel.to_string_lossy().into_owned();
    if let Err(e) = make_venv(&python, &venv, true, &[&wheel_arg, "pytest", "mypy"]) {
        panic!("installing the wheel into a fresh venv failed: {e}");
    }
    let started = std::time::Instant::now();
    // Run from a directory without the sources, so `import pith` can only
    // find the installed wheel.
    let out = Command::new(venv_python(&venv))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(crate_dir.join("tests"))
        .current_dir(tmp)
        .output()
        .expect("running pytest");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    println!("pytest took {:.1} s", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "pytest failed ({})", out.status);
}
