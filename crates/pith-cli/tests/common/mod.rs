//! What the command-line tests share: running the built `pith` binary and
//! showing what it did when an assertion fails.

#![allow(dead_code)] // Each test binary uses a different part.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `pith ARGS` with no standard input.
pub fn pith<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    pith_with_stdin(args, None)
}

/// Runs `pith ARGS`, writing `stdin` (if any) to its standard input.
pub fn pith_with_stdin<S: AsRef<std::ffi::OsStr>>(args: &[S], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the pith binary");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(bytes).expect("write stdin");
    }
    child.wait_with_output().expect("wait for pith")
}

/// Status, standard output and standard error, for failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
