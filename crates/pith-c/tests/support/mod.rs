//! What the C-library tests share: finding libpith's artifacts (built by
//! cargo for this test run, or built here when missing), the paths of the
//! headers and test sources, and running commands with their output shown
//! on failure.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `include/pith/c.h` and `include/leveldb/c.h`.
pub fn include_dir() -> PathBuf {
    crate_dir().join("include")
}

/// The directory holding `libpith.so` and `libpith.a`.
///
/// Cargo builds the library (all its crate types) before the integration
/// tests, into the profile directory two levels above the test
/// executable (`target/debug/deps/c_api-HASH`). When they are not there
/// (a test executable run by hand after a clean), they are built with the
/// cargo that runs the tests.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/PROFILE/deps")
        .to_path_buf();
    if !(dir.join("libpith.so").exists() && dir.join("libpith.a").exists()) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        // The profile of the tests' own build (`cargo test --release`
        // looks in target/release).
        let release = dir.file_name().is_some_and(|n| n == "release");
        let out = Command::new(cargo)
            .args(["build", "-p", "pith-c"])
            .args(release.then_some("--release"))
            .output()
            .expect("running cargo build -p pith-c");
        assert!(
            out.status.success(),
            "cargo build -p pith-c failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        dir.join("libpith.so").exists(),
        "no libpith.so in {}",
        dir.display()
    );
    dir
}

/// The system libraries a program linking `libpith.a` needs (Linux; the
/// list `rustc --print native-static-libs` gives).
pub const STATIC_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// Runs `cmd`, panicking with its output when it fails.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// A fresh scratch directory under cargo's per-crate temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a scratch directory");
    dir
}
