//! The acceptance test: programs written against LevelDB's C API, built
//! unchanged against libpith installed as `libleveldb.so`.
//!
//! `scripts/install-c.sh` installs this build's library and headers into
//! a scratch prefix; then, through levigo (github.com/jmhodges/levigo, a
//! cgo wrapper of LevelDB's C API that links `-lleveldb`), it builds and
//! runs our Go program (`tests/go/acceptance`) and runs levigo's own test
//! suite (a port of LevelDB's `c_test.c`) unmodified.
//!
//! Needs Go with cgo, and levigo from the Go module proxy (or the module
//! cache). Without `go` the test prints why and passes, unless
//! `PITH_REQUIRE_GO=1` (CI sets it), which makes it fail.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{crate_dir, lib_dir, run, scratch};

/// The `go` command: on the PATH, or the official tarball's place.
fn find_go() -> Option<PathBuf> {
    let candidates = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("go"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([
            PathBuf::from("/usr/local/go/bin/go"),
            PathBuf::from("/usr/lib/go/bin/go"),
        ])
        .find(|p| p.is_file())
}

/// A `go` command set up to build against the install in `prefix`.
fn go(go: &Path, prefix: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(go);
    cmd.args(args)
        .current_dir(crate_dir().join("tests/go"))
        .env("CGO_ENABLED", "1")
        .env(
            "CGO_CFLAGS",
            format!("-I{}", prefix.join("include").display()),
        )
        .env("CGO_LDFLAGS", format!("-L{}", prefix.join("lib").display()))
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        // Never fetch another toolchain because of go.mod's go line.
        .env("GOTOOLCHAIN", "local");
    cmd
}

/// Skips the test with `reason`, or fails it when `PITH_REQUIRE_GO=1`.
fn skip(reason: &str) {
    assert!(
        std::env::var("PITH_REQUIRE_GO").as_deref() != Ok("1"),
        "PITH_REQUIRE_GO=1, but {reason}"
    );
    println!("skipped: {reason} (set PITH_REQUIRE_GO=1 to make this a failure)");
}

#[test]
fn levigo_programs_build_and_pass_unchanged_against_libpith() {
    let Some(go_bin) = find_go() else {
        return skip("no go command was found (install Go, e.g. apt-get install golang-go)");
    };
    let dir = scratch("go-levigo");
    let prefix = dir.join("prefix");
    // levigo comes from the Go module proxy (or the module cache): an
    // offline machine without it skips, as one without Go does.
    let fetch = go(
        &go_bin,
        &prefix,
        &["mod", "download", "github.com/jmhodges/levigo"],
    )
    .output();
    match fetch {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return skip(&format!(
                "go could not fetch github.com/jmhodges/levigo: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("go did not run: {e}")),
    }
    run(Command::new(crate_dir().join("../../scripts/install-c.sh"))
        .arg(&prefix)
        .env("PITH_LIB_DIR", lib_dir()));
    assert!(prefix.join("lib/libleveldb.so").exists());

    // Our program, through levigo.
    let exe = dir.join("acceptance");
    let exe_arg = exe.to_str().expect("UTF-8 path");
    run(&mut go(
        &go_bin,
        &prefix,
        &["build", "-o", exe_arg, "./acceptance"],
    ));
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("creating the data directory");
    let out = run(Command::new(&exe)
        .arg(&data)
        .env("LD_LIBRARY_PATH", prefix.join("lib")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("levigo acceptance: ok"), "{stdout}");
    print!("{stdout}");

    // levigo's own tests, unmodified.
    let out = run(go(
        &go_bin,
        &prefix,
        &["test", "-count=1", "github.com/jmhodges/levigo"],
    )
    .env("TMPDIR", &data));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok") && stdout.contains("github.com/jmhodges/levigo"),
        "{stdout}"
    );
    print!("{stdout}");
}
