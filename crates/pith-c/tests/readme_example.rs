//! The README's C example (`tests/c/readme_example.c`, which the README
//! must quote verbatim) built the way the README says: installed with
//! `scripts/install-c.sh` into a prefix, compiled with the flags
//! `pkg-config pith` gives (or `-I`/`-L` when pkg-config is missing),
//! and run.

mod support;

use std::process::Command;

use support::{crate_dir, lib_dir, run, scratch};

#[test]
fn readme_c_example_is_quoted_builds_through_pkg_config_and_runs() {
    let example_path = crate_dir().join("tests/c/readme_example.c");
    let example = std::fs::read_to_string(&example_path).expect("reading readme_example.c");
    let readme =
        std::fs::read_to_string(crate_dir().join("../../README.md")).expect("reading README.md");
    assert!(
        readme.contains(&example),
        "README.md does not quote tests/c/readme_example.c verbatim; paste the file into its C section"
    );

    let dir = scratch("readme-example");
    let prefix = dir.join("prefix");
    run(Command::new(crate_dir().join("../../scripts/install-c.sh"))
        .arg(&prefix)
        .env("PITH_LIB_DIR", lib_dir()));
    let pc_dir = prefix.join("lib/pkgconfig");
    let flags = match Command::new("pkg-config")
        .args(["--cflags", "--libs", "pith"])
        .env("PKG_CONFIG_PATH", &pc_dir)
        .output()
    {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => {
            println!("pkg-config not found: building with -I and -L instead");
            format!(
                "-I{} -L{} -lpith",
                prefix.join("include").display(),
                prefix.join("lib").display()
            )
        }
    };
    let exe = dir.join("hello");
    let mut cc = Command::new("cc");
    cc.args(["-std=c99", "-Wall", "-Wextra", "-Werror"])
        .arg(&example_path)
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe);
    run(&mut cc);
    let out = run(Command::new(&exe)
        .arg(dir.join("db"))
        .env("LD_LIBRARY_PATH", prefix.join("lib")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in [
        "banana: yellow",
        "key: cherry\nkey: banana\nkey: apple",
        "match: banana\nmatch: cherry",
        "stats: {",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(
        !dir.join("db").exists(),
        "leveldb_destroy_db left the directory"
    );
}
